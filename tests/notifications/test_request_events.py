"""A request approved, denied or failed (moved by the real
``claims.lifecycle.transitions.transition``) emails its requester, if they want it, and
reaches the tenant's webhook; once."""

from __future__ import annotations

import pytest
from django.core import mail

from claims.lifecycle.transitions import Move, transition
from claims.models import ClaimRequest
from notifications.models import Event, Notification, WebhookDelivery
from notifications.services import save_preferences
from tests.factories import UserFactory
from tests.notifications.conftest import make_request

pytestmark = pytest.mark.django_db
State = ClaimRequest.State


def approve(request, actor):
    return transition(
        request,
        Move.APPROVE,
        actor=actor,
        decided_by=actor,
        decision_comment="Go ahead.",
    )


def deny(request, actor):
    return transition(
        request,
        Move.DENY,
        actor=actor,
        reason="Denied by a tenant admin",
        decided_by=actor,
        decision_comment="Use the A100s instead.",
    )


def fail(request, actor):
    return transition(
        request,
        Move.FAIL,
        reason="No node has 2 free H100 under one PCIe root.",
    )


CASES = [
    (approve, State.PENDING_APPROVAL, Event.REQUEST_APPROVED, "approved", "Go ahead."),
    (deny, State.PENDING_APPROVAL, Event.REQUEST_DENIED, "denied", "Use the A100s instead."),
    (fail, State.SUBMITTED, Event.REQUEST_FAILED, "failed", "under one PCIe root"),
]


@pytest.mark.parametrize(("move", "start", "event", "word", "detail"), CASES)
def test_the_requester_gets_an_email(
    move, start, event, word, detail, bob, alice, django_capture_on_commit_callbacks
):
    request = make_request(bob, alice.memberships.get().tenant, name="two-h100", state=start)
    with django_capture_on_commit_callbacks(execute=True):
        assert move(request, alice)
    [email] = mail.outbox
    assert email.to == ["bob@example.com"]
    assert email.subject == f"Claim gpu-test1/two-h100 {word}"
    assert detail in email.body
    assert f"/claims/requests/{request.pk}/" in email.body
    assert "/account/notifications/" in email.body
    notification = Notification.objects.get(user=bob)
    assert notification.event == event
    assert notification.sent_at is not None
    assert notification.object_id == str(request.pk)


@pytest.mark.parametrize(("move", "start", "event", "word", "detail"), CASES)
def test_a_requester_who_opted_out_gets_no_email(
    move, start, event, word, detail, bob, alice, django_capture_on_commit_callbacks
):
    save_preferences(user=bob, email={e.value: e != event for e in Event})
    request = make_request(bob, alice.memberships.get().tenant, state=start)
    with django_capture_on_commit_callbacks(execute=True):
        assert move(request, alice)
    assert mail.outbox == []
    assert not Notification.objects.filter(user=bob).exists()


@pytest.mark.parametrize(("move", "start", "event", "word", "detail"), CASES)
def test_the_tenant_webhook_gets_the_event(
    move, start, event, word, detail, bob, alice, team_a_webhook, django_capture_on_commit_callbacks
):
    request = make_request(bob, alice.memberships.get().tenant, state=start)
    with django_capture_on_commit_callbacks(execute=True):
        assert move(request, alice)
    [received] = team_a_webhook.received
    assert received.headers["X-DRA-Portal-Event"] == event.value
    payload = received.payload
    assert payload["event"] == event.value
    assert payload["tenant"] == "team-a"
    assert payload["data"]["request"]["id"] == str(request.pk)
    assert payload["data"]["request"]["requested_by"] == "bob"
    delivery = WebhookDelivery.objects.get()
    assert delivery.state == WebhookDelivery.State.DELIVERED
    assert delivery.notification.event == event


def test_a_requester_without_an_email_address_is_skipped_and_it_is_recorded(
    alice, team_a, django_capture_on_commit_callbacks
):
    dave = UserFactory(username="dave", email="")
    request = make_request(dave, team_a, state=State.SUBMITTED)
    with django_capture_on_commit_callbacks(execute=True):
        fail(request, None)
    assert mail.outbox == []
    notification = Notification.objects.get(user=dave)
    assert notification.sent_at is None
    assert "no email address" in notification.error


def test_a_rolled_back_transition_notifies_nobody(bob, team_a, django_capture_on_commit_callbacks):
    from django.db import transaction

    request = make_request(bob, team_a, state=State.SUBMITTED)
    with (
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        fail(request, None)
        raise RuntimeError("the surrounding work failed")
    assert mail.outbox == []
    assert not Notification.objects.exists()


def test_other_moves_notify_nobody(bob, team_a, django_capture_on_commit_callbacks):
    request = make_request(bob, team_a, state=State.SUBMITTED)
    with django_capture_on_commit_callbacks(execute=True):
        transition(request, Move.START)
        transition(request, Move.APPLY)
        transition(request, Move.START_USE)
    assert mail.outbox == []
    assert not Notification.objects.exists()


def test_the_same_event_is_never_sent_twice(bob, team_a, django_capture_on_commit_callbacks):
    from notifications.tasks import request_event

    request = make_request(bob, team_a, state=State.SUBMITTED)
    with django_capture_on_commit_callbacks(execute=True):
        fail(request, None)
        # A redelivered task (a worker died after sending) sends nothing more.
        request_event.delay(str(request.pk), Event.REQUEST_FAILED.value, "again")
    assert len(mail.outbox) == 1
    assert Notification.objects.count() == 1
