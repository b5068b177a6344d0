"""An idle claim tells its owner once per idle episode — the requester of the portal request
that made it, else the tenant's admins — and the tenant's webhook; a reclaimed one says so.
The real sweep and reclaim run, against the API emulator."""

from __future__ import annotations

import datetime
import logging

from django.core import mail
from django.utils import timezone

from claims.lifecycle.idle_reclaim import reclaim_idle_claims
from claims.models import REQUEST_ID_LABEL, ClaimIdleness, ClaimRequest
from claims.usage.idle import IDLE_RECLAIM_REASON, sweep_idle_claims
from kube.kinds import Kind
from notifications.models import Event, Notification
from portal.models import IdlePolicy
from tests.claims.idle_helpers import TEAM_A_CLAIM, mirrored, set_consumers
from tests.notifications.conftest import make_request

HOUR = datetime.timedelta(hours=1)


def sweep(at, capture) -> None:
    with capture(execute=True):
        sweep_idle_claims(now=at)


def made_by_the_portal(live, user, tenant) -> ClaimRequest:
    """team-a's claim carries the id of a request of ``user``, as claims the portal made do."""
    request = make_request(user, tenant, name=TEAM_A_CLAIM[1])
    _, cluster, resync = live
    cluster.patch(
        Kind.RESOURCE_CLAIMS,
        TEAM_A_CLAIM[1],
        {"metadata": {"labels": {REQUEST_ID_LABEL: str(request.pk)}}},
        namespace=TEAM_A_CLAIM[0],
    )
    resync()
    return request


def test_the_tenant_admins_hear_once_per_idle_episode(
    live, alice, bob, django_capture_on_commit_callbacks
):
    set_consumers(live, TEAM_A_CLAIM, [])
    now = timezone.now()
    sweep(now, django_capture_on_commit_callbacks)
    sweep(now + 3 * HOUR, django_capture_on_commit_callbacks)
    sweep(now + 4 * HOUR, django_capture_on_commit_callbacks)

    [email] = mail.outbox
    assert email.to == ["alice@example.com"]  # made outside the portal: its tenant's admins
    assert email.subject == "Claim gpu-test1/pod1-gpu-nscrq is idle"
    assert "no pod has used it since" in email.body
    assert "Nothing happens to it automatically" in email.body
    assert Notification.objects.get(user=alice).event == Event.CLAIM_IDLE

    # Used again, then idle again: a new episode, a new notice.
    set_consumers(live, TEAM_A_CLAIM, ["pod1"])
    sweep(now + 5 * HOUR, django_capture_on_commit_callbacks)
    set_consumers(live, TEAM_A_CLAIM, [])
    sweep(now + 5 * HOUR, django_capture_on_commit_callbacks)
    sweep(now + 8 * HOUR, django_capture_on_commit_callbacks)
    assert len(mail.outbox) == 2
    assert ClaimIdleness.objects.get(claim=mirrored(TEAM_A_CLAIM)).notified_episode == 2


def test_the_requester_of_a_portal_claim_hears_and_the_webhook_too(
    live, alice, bob, team_a, team_a_webhook, django_capture_on_commit_callbacks
):
    IdlePolicy.objects.create(tenant=team_a, reclaim=True, grace_period=HOUR)
    made_by_the_portal(live, bob, team_a)
    set_consumers(live, TEAM_A_CLAIM, [])
    now = timezone.now()
    sweep(now, django_capture_on_commit_callbacks)
    sweep(now + 3 * HOUR, django_capture_on_commit_callbacks)

    [email] = mail.outbox
    assert email.to == ["bob@example.com"]
    assert "The portal reclaims it at" in email.body
    [received] = team_a_webhook.received
    assert received.payload["event"] == "claim_idle"
    assert received.payload["data"]["reason"] == "no_consumer"
    assert received.payload["data"]["claim"]["name"] == TEAM_A_CLAIM[1]


def test_a_reclaimed_portal_claim_ends_its_request_and_tells_the_requester(
    live, bob, team_a, django_capture_on_commit_callbacks
):
    IdlePolicy.objects.create(tenant=team_a, reclaim=True, grace_period=HOUR)
    request = made_by_the_portal(live, bob, team_a)
    set_consumers(live, TEAM_A_CLAIM, [])
    now = timezone.now()
    sweep(now, django_capture_on_commit_callbacks)
    sweep(now + 3 * HOUR, django_capture_on_commit_callbacks)
    mail.outbox.clear()

    with django_capture_on_commit_callbacks(execute=True):
        assert reclaim_idle_claims(now=now + 5 * HOUR)["reclaimed"] == 1

    request.refresh_from_db()
    assert request.state == ClaimRequest.State.RELEASED
    assert request.reason == IDLE_RECLAIM_REASON
    [email] = mail.outbox
    assert email.to == ["bob@example.com"]
    assert email.subject == "Claim gpu-test1/pod1-gpu-nscrq reclaimed"
    assert "no pod used it past its grace period" in email.body


def test_an_idle_claim_of_no_tenant_is_logged(live, django_capture_on_commit_callbacks, caplog):
    set_consumers(live, ("gpu-test3", "single-gpu"), [])
    now = timezone.now()
    sweep(now, django_capture_on_commit_callbacks)
    with caplog.at_level(logging.INFO):
        sweep(now + 3 * HOUR, django_capture_on_commit_callbacks)

    assert mail.outbox == []
    assert "Idle claim gpu-test3/single-gpu: no tenant owns its namespace" in caplog.text
