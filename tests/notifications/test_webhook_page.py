"""/tenants/<slug>/webhook/: tenant admins and portal admins set their tenant's webhook
(audited), see its secret masked (a new one once), send a test event and see deliveries."""

from __future__ import annotations

import pytest
from django.urls import reverse

from notifications.models import WebhookDelivery
from portal.models import AuditEvent
from tests.notifications.conftest import SECRET

pytestmark = pytest.mark.django_db
URL = "/tenants/team-a/webhook/"


def test_the_tenant_admin_sees_the_page(client_as, alice):
    assert reverse("tenant-webhook", kwargs={"slug": "team-a"}) == URL
    response = client_as(alice).get(URL)
    assert response.status_code == 200
    body = response.content.decode()
    assert "No deliveries yet" in body
    assert "No secret yet" in body


def test_a_portal_admin_sees_the_page(client_as, root, team_a):
    assert client_as(root).get(URL).status_code == 200


def test_a_member_is_refused(client_as, bob):
    assert client_as(bob).get(URL).status_code == 403
    assert client_as(bob).post(URL, {"action": "test"}).status_code == 403


def test_another_tenant_gets_a_404(client_as, carol, team_a):
    assert client_as(carol).get(URL).status_code == 404
    assert client_as(carol).post(URL, {"url": "https://example.com/x"}).status_code == 404


def test_anonymous_users_are_sent_to_the_login(client, team_a):
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_saving_a_url_creates_a_secret_shown_once_and_is_audited(client_as, alice, team_a):
    client = client_as(alice)
    response = client.post(URL, {"action": "save", "url": "https://hooks.example.com/dra"})
    assert response.status_code == 200
    team_a.refresh_from_db()
    assert team_a.webhook_url == "https://hooks.example.com/dra"
    assert team_a.webhook_secret.startswith("whsec_")
    assert team_a.webhook_secret in response.content.decode()
    later = client.get(URL).content.decode()
    assert team_a.webhook_secret not in later
    assert "•" * 12 + team_a.webhook_secret[-4:] in later
    event = AuditEvent.objects.filter(object_type="portal.Tenant", actor=alice).latest("pk")
    assert event.after["webhook_url"] == "https://hooks.example.com/dra"
    assert team_a.webhook_secret not in str(event.after)


def test_a_new_secret_replaces_the_old_one(client_as, alice, team_a, team_a_webhook):
    response = client_as(alice).post(URL, {"action": "rotate"})
    team_a.refresh_from_db()
    assert team_a.webhook_secret != SECRET
    body = response.content.decode()
    assert team_a.webhook_secret in body
    assert 'data-testid="new-secret"' in body


def test_changing_the_url_keeps_the_secret(client_as, alice, team_a, team_a_webhook):
    response = client_as(alice).post(URL, {"action": "save", "url": "https://other.example.com/"})
    assert response.status_code == 302
    team_a.refresh_from_db()
    assert team_a.webhook_secret == SECRET


@pytest.mark.parametrize("url", ["ftp://example.com/hook", "file:///etc/passwd", ""])
def test_a_url_that_is_not_http_is_refused_with_a_clear_error(client_as, alice, team_a, url):
    response = client_as(alice).post(URL, {"action": "save", "url": url})
    assert response.status_code == 422
    body = response.content.decode()
    assert "is-invalid" in body
    team_a.refresh_from_db()
    assert team_a.webhook_url == ""


def test_the_test_button_sends_a_test_event_listed_with_its_outcome(
    client_as, alice, team_a, team_a_webhook, django_capture_on_commit_callbacks
):
    client = client_as(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(URL, {"action": "test"})
    assert response.status_code == 302
    [received] = team_a_webhook.received
    assert received.payload["event"] == "test"
    body = client.get(URL).content.decode()
    delivery = WebhookDelivery.objects.get()
    assert str(delivery.pk) in body
    assert 'data-state="delivered"' in body


def test_the_test_button_without_a_webhook_says_so(client_as, alice, team_a):
    response = client_as(alice).post(URL, {"action": "test"})
    assert response.status_code == 422
    assert "no webhook yet" in response.content.decode()


def test_removing_the_webhook_clears_url_and_secret(client_as, alice, team_a, team_a_webhook):
    assert client_as(alice).post(URL, {"action": "remove"}).status_code == 302
    team_a.refresh_from_db()
    assert (team_a.webhook_url, team_a.webhook_secret) == ("", "")


def test_deliveries_are_paginated_and_filtered_by_state(client_as, alice, team_a):
    for n in range(30):
        WebhookDelivery.objects.create(
            tenant=team_a,
            event="test",
            payload={"n": n},
            state=WebhookDelivery.State.FAILED if n == 0 else WebhookDelivery.State.DELIVERED,
        )
    client = client_as(alice)
    body = client.get(URL).content.decode()
    assert body.count('data-state="delivered"') == 25
    assert "page=2" in body
    failed = client.get(URL + "?state=failed").content.decode()
    assert failed.count('data-state="failed"') == 1
    assert 'data-state="delivered"' not in failed
    fragment = client.get(URL + "?state=pending", HTTP_HX_REQUEST="true").content.decode()
    assert "No delivery matches these filters" in fragment
    assert "<html" not in fragment


def test_deliveries_of_other_tenants_are_not_listed(client_as, alice, team_a, team_b):
    WebhookDelivery.objects.create(tenant=team_b, event="test", payload={})
    assert "No deliveries yet" in client_as(alice).get(URL).content.decode()
