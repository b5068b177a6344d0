"""The approvals queue stays true after a decision (the other rows judged against the usage
now, the Waiting count and the navigation badge updated) and holds renewals that wait."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from claims.models import ClaimRequest
from claims.requests.services import renew_request
from tests.claims.conftest import make_pending

pytestmark = pytest.mark.django_db
QUEUE = "/approvals/"


def approve_url(request):
    return reverse("approval-approve", kwargs={"pk": request.pk})


def test_after_an_htmx_approval_the_other_rows_are_judged_against_the_usage_now(
    client_as, alice, bob, team_a
):
    first = make_pending(bob, team_a, "first", devices=5)
    second = make_pending(bob, team_a, "second", devices=5)
    client = client_as(alice)
    assert client.get(QUEUE).content.decode().count("fits now") == 2
    response = client.post(
        approve_url(first), {"next": f"{QUEUE}?tenant=team-a"}, HTTP_HX_REQUEST="true"
    )
    content = response.content.decode()
    assert content.strip().startswith(f'<tr id="approval-{first.pk}"')
    assert (
        f'<tr id="approval-{second.pk}" data-testid="approval-row" hx-swap-oob="true">' in content
    )
    assert "would not fit now" in content  # 5 of 8 now held: 5 more do not fit
    assert "fits now" not in content.replace("would not fit now", "")
    assert 'id="pending-count" data-testid="pending-count" hx-swap-oob="true">1<' in content
    assert response["HX-Trigger"] == "approvals-changed"


def test_the_queue_judges_rows_against_fresh_usage_not_the_previews_cache(
    client_as, alice, bob, team_a, settings
):
    settings.CLAIMS_PREVIEW_USAGE_SECONDS = 60
    first = make_pending(bob, team_a, "first", devices=5)
    make_pending(bob, team_a, "second", devices=5)
    client = client_as(alice)
    assert client.get(QUEUE).content.decode().count("fits now") == 2
    client.post(approve_url(first), {"next": QUEUE})
    content = client.get(QUEUE).content.decode()
    assert "would not fit now" in content
    assert 'data-testid="pending-count">1<' in content


def test_the_navigation_badge_reloads_when_approvals_change(client_as, alice, bob, team_a):
    content = client_as(alice).get(reverse("claimrequest-list")).content.decode()
    assert (
        f'hx-get="{reverse("approval-count")}" hx-trigger="load, approvals-changed from:body" '
        'hx-swap="innerHTML"' in content
    )


def test_a_renewal_that_waits_is_in_the_queue_with_its_lease_and_why(client_as, held, alice, bob):
    renew_request(user=bob, request=held, lease=timedelta(days=7))
    client = client_as(alice)
    badge = client.get(reverse("approval-count")).content.decode()
    assert ">1<" in badge
    content = client.get(QUEUE).content.decode()
    assert 'data-kind="renewal"' in content
    assert "lease 2h → <strong>7d</strong> from approval" in content
    assert "A lease of 7d: leases longer than 3d need approval." in content
    assert "Holds its devices already" in content
    response = client.post(approve_url(held), {"next": QUEUE}, HTTP_HX_REQUEST="true")
    assert (
        "Approved the renewal of gpu-test1/short-run: its lease is 7d from now."
        in response.content.decode()
    )
    held.refresh_from_db()
    assert held.lease == timedelta(days=7)


def test_the_request_page_shows_the_waiting_renewal_and_offers_the_decision_to_admins(
    client_as, held, alice, bob
):
    response = client_as(bob).post(
        reverse("claimrequest-renew", kwargs={"pk": held.pk}), {"lease": "7d"}, follow=True
    )
    as_owner = response.content.decode()
    assert "The renewal of gpu-test1/short-run to 7d waits for approval" in as_owner
    assert "Renewal waiting for approval" in as_owner
    assert "renewal to 7d waits for approval" in as_owner  # beside the lease
    assert 'data-testid="approval-form"' not in as_owner
    as_admin = client_as(alice).get(held.get_absolute_url()).content.decode()
    assert 'data-testid="approval-form"' in as_admin
    assert "renewal to 7d requested; waits for approval" in as_admin  # the timeline
    held.refresh_from_db()
    assert held.state == ClaimRequest.State.APPLIED and held.lease == timedelta(hours=2)


def test_my_claims_says_a_renewal_waits(client_as, held, bob):
    renew_request(user=bob, request=held, lease=timedelta(days=7))
    content = client_as(bob).get(reverse("claimrequest-list")).content.decode()
    assert "renewal to 7d waits" in content
