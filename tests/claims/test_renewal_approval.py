"""A renewal that crosses an approval rule waits for approval: the current lease runs on until
it is decided; approving starts the renewed lease, denying leaves the lease as it was."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse
from django.utils import timezone

from claims.models import ClaimRequest
from claims.requests.approvals import approve_request, deny_request, expire_approvals
from claims.requests.services import release_request, renew_request
from claims.requests.specs import SpecErrors
from portal.models import AuditEvent

pytestmark = pytest.mark.django_db
State = ClaimRequest.State
HOURS_2 = timedelta(hours=2)
DAYS_3 = timedelta(days=3)
DAYS_7 = timedelta(days=7)


def test_a_renewal_over_the_lease_threshold_waits_and_the_lease_runs_on(held, bob):
    expires_at = held.expires_at
    renew_request(user=bob, request=held, lease=DAYS_7)
    held.refresh_from_db()
    assert (held.state, held.lease, held.expires_at) == (State.APPLIED, HOURS_2, expires_at)
    assert held.renewal_lease == DAYS_7
    assert held.renewal_reasons == ["A lease of 7d: leases longer than 3d need approval."]
    assert held.renewal_requested_by == bob
    assert ClaimRequest.objects.awaiting_approval().get() == held
    event = AuditEvent.objects.get(action=AuditEvent.Action.RENEWAL_REQUESTED)
    assert event.after["lease"] == "7d"


def test_a_renewal_within_the_threshold_is_applied_at_once(held, bob):
    renew_request(user=bob, request=held, lease=DAYS_3)
    held.refresh_from_db()
    assert held.lease == DAYS_3
    assert held.expires_at > timezone.now() + DAYS_3 - timedelta(minutes=1)
    assert not held.has_pending_renewal


def test_approving_the_renewal_starts_the_renewed_lease_from_now(held, bob, alice):
    renew_request(user=bob, request=held, lease=DAYS_7)
    approve_request(user=alice, request=held, comment="for the deadline")
    held.refresh_from_db()
    assert (held.state, held.lease) == (State.APPLIED, DAYS_7)
    assert held.expires_at > timezone.now() + DAYS_7 - timedelta(minutes=1)
    assert not held.has_pending_renewal
    approved = AuditEvent.objects.get(action=AuditEvent.Action.CLAIM_APPROVED)
    assert approved.after == {"renewal": "approved", "lease": "7d", "comment": "for the deadline"}
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CLAIM_RENEWED).count() == 1


def test_denying_the_renewal_leaves_the_lease_as_it_was(held, bob, alice):
    expires_at = held.expires_at
    renew_request(user=bob, request=held, lease=DAYS_7)
    deny_request(user=alice, request=held, comment="three days is enough")
    held.refresh_from_db()
    assert (held.state, held.lease, held.expires_at) == (State.APPLIED, HOURS_2, expires_at)
    assert not held.has_pending_renewal
    denied = AuditEvent.objects.get(action=AuditEvent.Action.CLAIM_DENIED)
    assert denied.after["renewal"] == "denied"
    with pytest.raises(SpecErrors, match="waits for approval"):
        approve_request(user=alice, request=held)


def test_nobody_approves_a_renewal_they_asked_for_but_a_portal_admin_may(held, alice, root):
    renew_request(user=alice, request=held, lease=DAYS_7)  # alice renews bob's claim
    with pytest.raises(PermissionDenied):
        approve_request(user=alice, request=held)
    approve_request(user=root, request=held)
    held.refresh_from_db()
    assert held.lease == DAYS_7


def test_a_tenant_that_approves_everything_sends_every_renewal_to_approval(held, bob, team_a):
    team_a.requires_approval = True
    team_a.save()
    renew_request(user=bob, request=held, lease=HOURS_2)
    held.refresh_from_db()
    assert held.renewal_reasons == ["Team A has every request approved."]


def test_a_later_renewal_within_the_threshold_replaces_the_waiting_one(held, bob):
    renew_request(user=bob, request=held, lease=DAYS_7)
    renew_request(user=bob, request=held, lease=timedelta(days=1))
    held.refresh_from_db()
    assert held.lease == timedelta(days=1)
    assert not held.has_pending_renewal


def test_releasing_the_claim_drops_its_waiting_renewal(held, bob, alice):
    renew_request(user=bob, request=held, lease=DAYS_7)
    release_request(user=bob, request=held)
    held.refresh_from_db()
    assert held.state == State.RELEASING
    assert not held.has_pending_renewal
    assert not ClaimRequest.objects.awaiting_approval().exists()


def test_renewals_nobody_decides_in_time_are_dropped_and_the_lease_stays(held, bob, settings):
    settings.CLAIMS_APPROVAL_TIMEOUT = DAYS_3
    renew_request(user=bob, request=held, lease=DAYS_7)
    ClaimRequest.objects.filter(pk=held.pk).update(
        renewal_requested_at=timezone.now() - DAYS_3 - timedelta(minutes=1)
    )
    assert expire_approvals() == 1
    held.refresh_from_db()
    assert (held.state, held.lease) == (State.APPLIED, HOURS_2)
    assert not held.has_pending_renewal
    event = AuditEvent.objects.get(action=AuditEvent.Action.RENEWAL_EXPIRED)
    assert event.after == {"reason": "not approved within 3d"}


def test_the_admin_shows_a_waiting_renewal_and_its_action_approves_it(client_as, held, bob, root):
    renew_request(user=bob, request=held, lease=DAYS_7)
    client = client_as(root)
    page = client.get(reverse("admin:claims_claimrequest_change", args=[held.pk])).content
    assert "A renewal to 7d waits for approval" in page.decode()
    response = client.post(
        reverse("admin:claims_claimrequest_changelist"),
        {"action": "approve", "_selected_action": [str(held.pk)]},
        follow=True,
    )
    assert "Approved 1 request(s)." in response.content.decode()
    held.refresh_from_db()
    assert (held.lease, held.has_pending_renewal) == (DAYS_7, False)
