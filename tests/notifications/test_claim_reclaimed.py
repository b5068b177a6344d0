"""A claim taken back — its lease ended, or a portal admin forced its release — tells its
owner and the tenant's webhook; an owner's own release does not. The real release path runs
(the claim services, then the mirror's release task against the API emulator)."""

from __future__ import annotations

from datetime import timedelta

from django.core import mail
from django.utils import timezone

from claims.lifecycle.leases import expire_leases
from claims.models import ClaimRequest
from claims.requests.services import release_request
from notifications.models import Event, Notification
from notifications.services import save_preferences
from tests.notifications.conftest import make_request

State = ClaimRequest.State


def test_a_forced_release_tells_the_owner(
    live, bob, root, team_a, django_capture_on_commit_callbacks
):
    request = make_request(bob, team_a, name="forced")
    with django_capture_on_commit_callbacks(execute=True):
        release_request(user=root, request=request, force=True)
    request.refresh_from_db()
    assert request.state == State.RELEASED
    [email] = mail.outbox
    assert email.to == ["bob@example.com"]
    assert email.subject == "Claim gpu-test1/forced reclaimed"
    assert "a portal admin forced its release" in email.body
    assert Notification.objects.get(user=bob).event == Event.CLAIM_RECLAIMED


def test_an_ended_lease_tells_the_owner_and_the_webhook(
    live, bob, team_a, team_a_webhook, django_capture_on_commit_callbacks
):
    request = make_request(bob, team_a, name="leased")
    with django_capture_on_commit_callbacks(execute=True):
        assert expire_leases(now=timezone.now() + timedelta(days=8)) == 1
    request.refresh_from_db()
    assert request.state == State.EXPIRED
    [email] = mail.outbox
    assert "its lease ended" in email.body
    [received] = team_a_webhook.received
    assert received.payload["event"] == "claim_reclaimed"
    assert received.payload["data"]["reason"] == "lease ended"


def test_an_owner_who_opted_out_is_not_told(live, bob, team_a, django_capture_on_commit_callbacks):
    save_preferences(user=bob, email={Event.REQUEST_FAILED.value: True})
    make_request(bob, team_a, name="leased")
    with django_capture_on_commit_callbacks(execute=True):
        expire_leases(now=timezone.now() + timedelta(days=8))
    assert mail.outbox == []


def test_releasing_ones_own_claim_notifies_nobody(
    live, bob, team_a, django_capture_on_commit_callbacks
):
    request = make_request(bob, team_a, name="mine")
    with django_capture_on_commit_callbacks(execute=True):
        release_request(user=bob, request=request)
    request.refresh_from_db()
    assert request.state == State.RELEASED
    assert mail.outbox == []
    assert not Notification.objects.exists()
