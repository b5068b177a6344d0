"""Beat: owners are told once when a lease ends within ``NOTIFY_LEASE_LEAD``; renewing arms
a new notice."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from claims.models import ClaimRequest
from claims.requests.services import renew_request
from notifications.models import Event, Notification
from notifications.services import save_preferences
from notifications.tasks import lease_expiring
from tests.notifications.conftest import make_request

pytestmark = pytest.mark.django_db
State = ClaimRequest.State


def soon(hours: float = 3):
    return timezone.now() + timedelta(hours=hours)


def run_beat(django_capture_on_commit_callbacks) -> int:
    with django_capture_on_commit_callbacks(execute=True):
        return lease_expiring.delay().get()


def test_an_owner_is_told_once_however_often_the_beat_runs(
    bob, team_a, django_capture_on_commit_callbacks
):
    make_request(bob, team_a, name="ending", expires_at=soon())
    assert run_beat(django_capture_on_commit_callbacks) == 1
    assert run_beat(django_capture_on_commit_callbacks) == 0
    [email] = mail.outbox
    assert email.to == ["bob@example.com"]
    assert email.subject.startswith("Claim gpu-test1/ending: lease ends in 2h")
    assert "Renew it" in email.body
    assert Notification.objects.get().event == Event.LEASE_EXPIRING


def test_leases_ending_later_than_the_lead_time_or_ended_requests_are_left_alone(
    bob, team_a, settings, django_capture_on_commit_callbacks
):
    settings.NOTIFY_LEASE_LEAD = "2h"
    make_request(bob, team_a, name="later", expires_at=soon(3))
    make_request(bob, team_a, name="gone", state=State.RELEASED, expires_at=soon(1))
    make_request(bob, team_a, name="releasing", state=State.RELEASING, expires_at=soon(1))
    make_request(bob, team_a, name="no-lease", lease=None, expires_at=None)
    assert run_beat(django_capture_on_commit_callbacks) == 0
    settings.NOTIFY_LEASE_LEAD = "4h"
    assert run_beat(django_capture_on_commit_callbacks) == 1
    assert [email.subject.split(":")[0] for email in mail.outbox] == ["Claim gpu-test1/later"]


def test_renewing_the_lease_arms_a_new_notice(bob, team_a, django_capture_on_commit_callbacks):
    request = make_request(bob, team_a, name="renewed", expires_at=soon())
    run_beat(django_capture_on_commit_callbacks)
    renew_request(user=bob, request=request, lease=timedelta(hours=5))
    assert run_beat(django_capture_on_commit_callbacks) == 1
    assert len(mail.outbox) == 2


def test_an_owner_who_opted_out_is_not_told_but_the_webhook_is(
    bob, team_a, team_a_webhook, django_capture_on_commit_callbacks
):
    save_preferences(user=bob, email={})
    make_request(bob, team_a, name="ending", expires_at=soon())
    run_beat(django_capture_on_commit_callbacks)
    assert mail.outbox == []
    [received] = team_a_webhook.received
    assert received.payload["event"] == "lease_expiring"
    assert received.payload["data"]["request"]["name"] == "ending"
