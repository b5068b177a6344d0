"""Saving a webhook applies the delivery's address rules: a URL whose host is (or resolves to) a
loopback, private or link-local address is refused when it is saved, naming the setting that
allows it, instead of failing at its first delivery."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from notifications.tenant_webhooks import set_webhook_url

pytestmark = pytest.mark.django_db
URL = "/tenants/team-a/webhook/"

INTERNAL = [
    "http://127.0.0.1:8000/hook",
    "http://localhost/hook",
    "http://[::1]/hook",
    "http://10.0.0.5/hook",
    "http://169.254.169.254/latest/meta-data/",
]


@pytest.fixture(autouse=True)
def _private_addresses_refused(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False


@pytest.mark.parametrize("url", INTERNAL)
def test_it_refuses_an_internal_address_on_save_naming_the_setting(client_as, alice, team_a, url):
    response = client_as(alice).post(URL, {"action": "save", "url": url})
    assert response.status_code == 422
    body = response.content.decode()
    assert "an internal address" in body
    assert "WEBHOOK_ALLOW_PRIVATE_ADDRESSES" in body
    team_a.refresh_from_db()
    assert (team_a.webhook_url, team_a.webhook_secret) == ("", "")


def test_the_service_refuses_it_on_the_url_field(alice, team_a):
    with pytest.raises(ValidationError) as caught:
        set_webhook_url(actor=alice, tenant=team_a, url="http://localhost:9000/hook")
    assert list(caught.value.message_dict) == ["webhook_url"]
    assert caught.value.messages == [
        "localhost resolves to 127.0.0.1, an internal address; webhooks go to public receivers "
        "(a portal admin can allow internal ones with WEBHOOK_ALLOW_PRIVATE_ADDRESSES)."
    ]


def test_with_the_setting_an_internal_address_is_saved(client_as, alice, team_a, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    response = client_as(alice).post(URL, {"action": "save", "url": "http://127.0.0.1:9000/h"})
    assert response.status_code == 200
    team_a.refresh_from_db()
    assert team_a.webhook_url == "http://127.0.0.1:9000/h"


def test_a_name_that_does_not_resolve_yet_is_saved(client_as, alice, team_a):
    # The .invalid domain never resolves (RFC 2606); a delivery retries it and says why.
    client_as(alice).post(URL, {"action": "save", "url": "https://hooks.receiver.invalid/dra"})
    team_a.refresh_from_db()
    assert team_a.webhook_url == "https://hooks.receiver.invalid/dra"


def test_the_admin_leaves_the_webhook_to_its_checked_page(client_as, root, team_a):
    page = client_as(root).get(f"/admin/portal/tenant/{team_a.pk}/change/")
    assert page.status_code == 200
    body = page.content.decode()
    assert 'name="webhook_url"' not in body
    assert 'name="webhook_secret"' not in body
