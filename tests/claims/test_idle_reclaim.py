"""Reclaiming idle claims: only for tenants whose idle policy says so, only after the grace
period, only claims no pod reserves (asked of the API server right before deleting, through
the real client against the API emulator), idempotent, every step audited."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from claims.lifecycle.idle_reclaim import reclaim_idle_claims
from claims.models import ClaimIdleness
from claims.usage.idle import sweep_idle_claims
from kube.kinds import Kind
from portal.models import AuditEvent, IdlePolicy
from tests.claims.idle_helpers import TEAM_A_CLAIM, mirrored, set_consumers

HOUR = datetime.timedelta(hours=1)


def in_cluster(live) -> dict:
    _, cluster, _ = live
    return cluster.get(Kind.RESOURCE_CLAIMS, TEAM_A_CLAIM[1], TEAM_A_CLAIM[0])


def actions() -> list[str]:
    return list(AuditEvent.objects.order_by("id").values_list("action", flat=True))


@pytest.fixture
def flagged(team_a, live):
    """team-a's claim lost its pod and was flagged idle; returns when it was flagged."""
    set_consumers(live, TEAM_A_CLAIM, [])
    now = timezone.now()
    sweep_idle_claims(now=now)
    flagged_at = now + 3 * HOUR
    sweep_idle_claims(now=flagged_at)
    assert ClaimIdleness.objects.get(claim=mirrored(TEAM_A_CLAIM)).is_idle
    return flagged_at


@pytest.fixture
def reclaiming(team_a):
    return IdlePolicy.objects.create(tenant=team_a, reclaim=True, grace_period=HOUR)


def test_with_reclaim_off_an_idle_claim_is_never_deleted(flagged, live):
    row = ClaimIdleness.objects.get(claim=mirrored(TEAM_A_CLAIM))
    assert row.reclaim_at is None

    assert reclaim_idle_claims(now=flagged + 365 * 24 * HOUR)["reclaimed"] == 0

    assert "deletionTimestamp" not in in_cluster(live)["metadata"]
    assert AuditEvent.Action.CLAIM_RECLAIMED not in actions()


def test_an_idle_claim_is_deleted_after_the_grace_period(reclaiming, flagged, live):
    sweep_idle_claims(now=flagged)  # the policy now applies: reclaim at flagged + 1 h
    row = ClaimIdleness.objects.get(claim=mirrored(TEAM_A_CLAIM))
    assert row.reclaim_at == flagged + HOUR

    assert reclaim_idle_claims(now=flagged + 30 * datetime.timedelta(minutes=1)) == {
        "reclaimed": 0,
        "kept": 0,
        "gone": 0,
    }
    assert "deletionTimestamp" not in in_cluster(live)["metadata"]

    assert reclaim_idle_claims(now=flagged + 2 * HOUR)["reclaimed"] == 1

    # Deleted: the scheduler's delete-protection finalizer holds it until its controller lets go.
    assert in_cluster(live)["metadata"]["deletionTimestamp"]
    row.refresh_from_db()
    assert row.reclaimed_at == flagged + 2 * HOUR
    [event] = AuditEvent.objects.filter(action=AuditEvent.Action.CLAIM_RECLAIMED)
    assert event.object_repr == "gpu-test1/pod1-gpu-nscrq"
    assert event.actor is None
    assert event.tenant.slug == "team-a"
    assert event.after["reason"] == "no_consumer"


def test_reclaiming_twice_deletes_and_audits_once(reclaiming, flagged, live):
    sweep_idle_claims(now=flagged)
    reclaim_idle_claims(now=flagged + 2 * HOUR)
    live[2]()  # the mirror sees the claim deleting

    assert reclaim_idle_claims(now=flagged + 3 * HOUR)["reclaimed"] == 0
    sweep_idle_claims(now=flagged + 3 * HOUR)  # a deleting claim keeps its row as it was

    assert actions().count(AuditEvent.Action.CLAIM_RECLAIMED) == 1
    assert ClaimIdleness.objects.get(claim=mirrored(TEAM_A_CLAIM)).reclaimed_at is not None


def test_a_claim_a_pod_reserves_by_then_is_kept_even_before_the_mirror_knows(
    reclaiming, flagged, live
):
    sweep_idle_claims(now=flagged)
    # A pod reserves the claim during the grace period; the mirror has not seen it yet.
    set_consumers(live, TEAM_A_CLAIM, ["late-pod"], mirror=False)

    assert reclaim_idle_claims(now=flagged + 2 * HOUR)["kept"] == 1

    assert "deletionTimestamp" not in in_cluster(live)["metadata"]
    [event] = AuditEvent.objects.filter(action=AuditEvent.Action.CLAIM_RECLAIM_SKIPPED)
    assert event.after["reserved_for"] == ["pods/late-pod"]
    assert ClaimIdleness.objects.get(claim=mirrored(TEAM_A_CLAIM)).reclaimed_at is None


def test_a_claim_used_again_during_the_grace_period_is_unflagged_and_kept(
    reclaiming, flagged, live
):
    sweep_idle_claims(now=flagged)
    set_consumers(live, TEAM_A_CLAIM, ["pod1"])
    sweep_idle_claims(now=flagged + 10 * datetime.timedelta(minutes=1))

    assert reclaim_idle_claims(now=flagged + 2 * HOUR)["reclaimed"] == 0

    assert "deletionTimestamp" not in in_cluster(live)["metadata"]
    assert actions()[-1] == AuditEvent.Action.CLAIM_ACTIVE


def test_the_delete_is_refused_when_the_claim_changed_since_it_was_read(
    reclaiming, flagged, live, monkeypatch
):
    """Between the read and the delete a pod reserves the claim: the delete carries the
    read's resourceVersion, so the API server refuses it and the claim stays."""
    sweep_idle_claims(now=flagged)
    _, cluster, _ = live
    from kube import client as cluster_module

    real_get = cluster_module.Cluster.get

    def get_then_reserve(self, kind, name, namespace=None):
        found = real_get(self, kind, name, namespace)
        if kind == Kind.RESOURCE_CLAIMS and name == TEAM_A_CLAIM[1]:
            set_consumers(live, TEAM_A_CLAIM, ["racing-pod"], mirror=False)
        return found

    monkeypatch.setattr(cluster_module.Cluster, "get", get_then_reserve)

    assert reclaim_idle_claims(now=flagged + 2 * HOUR)["kept"] == 1

    monkeypatch.undo()
    found = in_cluster(live)
    assert "deletionTimestamp" not in found["metadata"]
    assert found["status"]["reservedFor"][0]["name"] == "racing-pod"


def test_the_audit_log_links_each_step_to_the_claim(reclaiming, flagged, live, client_as, root):
    sweep_idle_claims(now=flagged)
    reclaim_idle_claims(now=flagged + 2 * HOUR)

    response = client_as(root).get("/audit/?object_type=claims.ResourceClaim")

    assert response.status_code == 200
    assert "Claim flagged idle" in response.text
    assert "Idle claim reclaimed" in response.text
    assert 'href="/claims/gpu-test1/pod1-gpu-nscrq/"' in response.text
