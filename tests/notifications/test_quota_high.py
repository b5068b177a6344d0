"""Beat: tenant admins (and the webhook) are told once when usage reaches 90 % of a quota
limit; the alarm re-arms once usage falls back below."""

from __future__ import annotations

import pytest
from django.core import mail

from claims.lifecycle.transitions import Move, transition
from claims.models import ClaimRequest
from notifications.models import Notification, QuotaAlarm
from notifications.services import save_preferences
from notifications.tasks import quota_high
from tests.notifications.conftest import make_request

pytestmark = pytest.mark.django_db
State = ClaimRequest.State


def run_beat(django_capture_on_commit_callbacks) -> int:
    with django_capture_on_commit_callbacks(execute=True):
        return quota_high.delay().get()


def hold(user, tenant, devices: int, name: str) -> ClaimRequest:
    """A request in flight holds its devices against the quota (team-a: 8 devices)."""
    return make_request(user, tenant, name=name, state=State.SUBMITTED, held_devices=devices)


def test_tenant_admins_are_told_once_per_crossing(
    alice, bob, team_a, django_capture_on_commit_callbacks
):
    hold(bob, team_a, 7, "seven")  # 87 %: below the line
    assert run_beat(django_capture_on_commit_callbacks) == 0
    hold(bob, team_a, 1, "eighth")  # 100 %
    assert run_beat(django_capture_on_commit_callbacks) == 1
    assert run_beat(django_capture_on_commit_callbacks) == 0
    [email] = mail.outbox
    assert email.to == ["alice@example.com"]  # the tenant admin, not bob
    assert email.subject == "Team A uses 100 % of its gpu.nvidia.com quota"
    assert "devices: 8 of 8 (100 %)" in email.body


def test_the_alarm_re_arms_when_usage_falls_below_the_line(
    alice, bob, team_a, django_capture_on_commit_callbacks
):
    hold(bob, team_a, 4, "four")
    second = hold(bob, team_a, 4, "other-four")
    run_beat(django_capture_on_commit_callbacks)
    transition(second, Move.FAIL, reason="test")
    assert run_beat(django_capture_on_commit_callbacks) == 0
    alarm = QuotaAlarm.objects.get(tenant=team_a)
    assert not alarm.is_raised
    hold(bob, team_a, 4, "again")
    assert run_beat(django_capture_on_commit_callbacks) == 1
    quota_mails = [m for m in mail.outbox if "quota" in m.subject]
    assert len(quota_mails) == 2
    assert QuotaAlarm.objects.get(tenant=team_a).crossings == 2


def test_the_line_is_configurable(alice, bob, team_a, settings, django_capture_on_commit_callbacks):
    settings.NOTIFY_QUOTA_HIGH_PERCENT = 50
    hold(bob, team_a, 4, "half")
    assert run_beat(django_capture_on_commit_callbacks) == 1


def test_an_admin_who_opted_out_is_not_told_but_the_webhook_is(
    alice, bob, team_a, team_a_webhook, django_capture_on_commit_callbacks
):
    save_preferences(user=alice, email={})
    hold(bob, team_a, 8, "all")
    run_beat(django_capture_on_commit_callbacks)
    assert mail.outbox == []
    [received] = team_a_webhook.received
    payload = received.payload
    assert payload["event"] == "quota_high"
    assert payload["data"]["device_class"] == "gpu.nvidia.com"
    assert payload["data"]["measures"] == [
        {"measure": "devices", "used": 8, "limit": 8, "percent": 100}
    ]
    assert Notification.objects.get().tenant == team_a


def test_other_tenants_are_not_told(
    alice, carol, team_a, team_b, django_capture_on_commit_callbacks
):
    hold(carol, team_b, 2, "full")
    run_beat(django_capture_on_commit_callbacks)
    assert mail.outbox == []  # team-b has no tenant admin; alice is not told of it
