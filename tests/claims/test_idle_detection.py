"""The idle sweep: which allocated claims are idle, why, since when; flagged and unflagged
idempotently, every flag and unflag audited, in a fixed number of queries."""

from __future__ import annotations

import datetime

import pytest
from django.core.cache import cache
from django.utils import timezone

from claims.models import ClaimIdleness, ResourceClaim
from claims.usage.idle import idle_claim_count, sweep_idle_claims
from claims.usage.tasks import SWEEP_LOCK, sweep_idle
from kube.kinds import Kind
from portal.celery import app
from portal.models import AuditEvent, IdlePolicy
from tests.claims.idle_helpers import (
    ADMIN_ACCESS_CLAIM,
    OTHER_CLAIM,
    TEAM_A_CLAIM,
    mirrored,
    set_consumers,
    utilisation,
)

HOUR = datetime.timedelta(hours=1)
Reason = ClaimIdleness.Reason


def idleness(claim) -> ClaimIdleness:
    return ClaimIdleness.objects.get(claim=mirrored(claim))


def audit(action) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action).order_by("id"))


@pytest.fixture
def unused(team_a, live):
    """team-a's claim lost its pod (the API server says so, the mirror has seen it)."""
    set_consumers(live, TEAM_A_CLAIM, [])
    return live


def test_a_claim_without_consumer_is_idle_once_the_time_has_passed(unused):
    now = timezone.now()
    sweep_idle_claims(now=now)
    assert idleness(TEAM_A_CLAIM).reason == Reason.NOT_IDLE
    assert idleness(TEAM_A_CLAIM).unused_since <= now

    summary = sweep_idle_claims(now=now + 2 * HOUR + datetime.timedelta(minutes=1))

    row = idleness(TEAM_A_CLAIM)
    assert row.reason == Reason.NO_CONSUMER
    assert row.episode == 1
    assert row.reclaim_at is None  # reclaim is off unless the tenant's policy says so
    assert summary.flagged == 1
    [event] = audit(AuditEvent.Action.CLAIM_IDLE)
    assert event.object_repr == "gpu-test1/pod1-gpu-nscrq"
    assert event.after["reason"] == "no_consumer"
    assert event.tenant.slug == "team-a"
    # Only that claim: every other claim of the fixtures has its pods.
    assert list(ResourceClaim.objects.idle()) == [mirrored(TEAM_A_CLAIM)]


def test_running_the_sweep_again_changes_nothing(unused):
    now = timezone.now()
    sweep_idle_claims(now=now)
    later = now + 3 * HOUR
    sweep_idle_claims(now=later)
    before = list(ClaimIdleness.objects.values())

    summary = sweep_idle_claims(now=later)

    assert summary.flagged == summary.unflagged == 0
    assert list(ClaimIdleness.objects.values()) == before
    assert len(audit(AuditEvent.Action.CLAIM_IDLE)) == 1


def test_the_tenants_policy_overrides_the_default_time(unused, team_a):
    IdlePolicy.objects.create(tenant=team_a, no_consumer_after=datetime.timedelta(minutes=10))
    now = timezone.now()
    sweep_idle_claims(now=now)

    sweep_idle_claims(now=now + datetime.timedelta(minutes=11))

    assert idleness(TEAM_A_CLAIM).reason == Reason.NO_CONSUMER


def test_a_claim_is_unflagged_when_a_pod_reserves_it_again(unused, alice):
    now = timezone.now()
    sweep_idle_claims(now=now)
    sweep_idle_claims(now=now + 3 * HOUR)
    assert idle_claim_count(alice) == 1

    set_consumers(unused, TEAM_A_CLAIM, ["pod1"])
    summary = sweep_idle_claims(now=now + 3 * HOUR + datetime.timedelta(minutes=2))

    row = idleness(TEAM_A_CLAIM)
    assert (row.reason, row.unused_since, row.idle_since) == (Reason.NOT_IDLE, None, None)
    assert summary.unflagged == 1
    [event] = audit(AuditEvent.Action.CLAIM_ACTIVE)
    assert event.object_repr == "gpu-test1/pod1-gpu-nscrq"
    assert idle_claim_count(alice) == 0


def test_low_utilisation_over_the_window_makes_a_used_claim_idle(team_a, live):
    now = timezone.now()
    utilisation(TEAM_A_CLAIM, [2.0, 1.0, 4.9] * 16, now=now)  # 4 hours under 5 %

    sweep_idle_claims(now=now)

    row = idleness(TEAM_A_CLAIM)
    assert row.reason == Reason.LOW_UTILISATION
    assert row.threshold == 5
    assert row.utilisation == pytest.approx(2.6, abs=0.05)
    assert row.low_since == now - 4 * HOUR
    assert mirrored(TEAM_A_CLAIM).consumer_count == 1


def test_one_bucket_above_the_threshold_keeps_a_claim_off_the_list(team_a, live):
    now = timezone.now()
    utilisation(TEAM_A_CLAIM, [1.0] * 30 + [60.0] + [1.0] * 17, now=now)

    sweep_idle_claims(now=now)

    assert idleness(TEAM_A_CLAIM).reason == Reason.NOT_IDLE


def test_a_claim_with_busy_devices_is_not_idle(team_a, live):
    now = timezone.now()
    utilisation(TEAM_A_CLAIM, [85.0] * 48, now=now)

    sweep_idle_claims(now=now)

    assert not ResourceClaim.objects.idle().exists()


def test_a_claim_without_telemetry_is_unknown_never_idle_by_utilisation(team_a, live):
    now = timezone.now()
    utilisation(OTHER_CLAIM, [0.0] * 12, now=now)  # one hour of data, not four: unknown

    sweep_idle_claims(now=now + datetime.timedelta(minutes=1))

    assert not ResourceClaim.objects.idle().exists()
    assert idleness(TEAM_A_CLAIM).reason == Reason.NOT_IDLE  # no data at all


def test_an_admin_access_claim_is_never_idle_by_utilisation(live):
    now = timezone.now()
    utilisation(ADMIN_ACCESS_CLAIM, [0.0] * 48, now=now)

    sweep_idle_claims(now=now)

    assert idleness(ADMIN_ACCESS_CLAIM).reason == Reason.NOT_IDLE


def test_a_threshold_set_by_the_tenant_applies_to_its_claims(team_a, live):
    IdlePolicy.objects.create(tenant=team_a, utilisation_threshold=50)
    now = timezone.now()
    utilisation(TEAM_A_CLAIM, [30.0] * 48, now=now)
    utilisation(ADMIN_ACCESS_CLAIM, [30.0] * 48, now=now)

    sweep_idle_claims(now=now)

    assert idleness(TEAM_A_CLAIM).reason == Reason.LOW_UTILISATION
    assert idleness(TEAM_A_CLAIM).threshold == 50


def test_the_sweep_reads_and_writes_in_a_fixed_number_of_queries(
    unused, team_a, django_assert_num_queries
):
    IdlePolicy.objects.create(tenant=team_a, utilisation_threshold=50)
    now = timezone.now()
    sweep_idle_claims(now=now)
    utilisation(OTHER_CLAIM, [0.0] * 48, now=now + 3 * HOUR)
    # A savepoint; policies, claims, idleness rows; one rollup query per distinct utilisation
    # policy (two: team-a's, and the default for claims of no tenant); the upsert; the audit
    # events; the savepoint's release.
    with django_assert_num_queries(9):
        summary = sweep_idle_claims(now=now + 3 * HOUR)
    assert summary.flagged == 2


def test_an_idle_claim_that_is_deallocated_leaves_the_list_audited(unused):
    now = timezone.now()
    sweep_idle_claims(now=now)
    sweep_idle_claims(now=now + 3 * HOUR)
    _, cluster, resync = unused
    cluster.patch_status(
        Kind.RESOURCE_CLAIMS,
        TEAM_A_CLAIM[1],
        {"status": {"allocation": None}},
        namespace=TEAM_A_CLAIM[0],
    )
    resync()

    summary = sweep_idle_claims(now=now + 3 * HOUR)

    assert summary.unflagged == 1
    assert not ClaimIdleness.objects.filter(claim=mirrored(TEAM_A_CLAIM)).exists()
    [event] = audit(AuditEvent.Action.CLAIM_ACTIVE)
    assert event.after == {"episode": 1, "deallocated": True}


def test_the_sweep_and_the_reclaim_run_on_celery_beat_on_the_default_queue():
    schedule = {entry["task"] for entry in app.conf.beat_schedule.values()}
    for task in ("claims.sweep_idle", "claims.reclaim_idle"):
        assert task in schedule
        assert task in app.tasks
        assert app.amqp.router.route({}, task)["queue"].name == "default"


def test_a_sweep_already_running_elsewhere_is_not_run_twice(unused):
    cache.add(SWEEP_LOCK, 1, 60)
    assert sweep_idle.delay().get() == {"skipped": 1}
    cache.delete(SWEEP_LOCK)
    assert sweep_idle.delay().get()["idle"] == 0


def test_only_the_window_before_the_sweep_counts(team_a, live):
    now = timezone.now()
    utilisation(TEAM_A_CLAIM, [0.0] * 48, now=now)  # the 4 hours before ``now``

    sweep_idle_claims(now=now - 3 * HOUR)  # then, only one hour of it had been read

    assert idleness(TEAM_A_CLAIM).reason == Reason.NOT_IDLE
