"""Faults during the lifecycle: an unreachable API server, a worker killed mid-apply, and a
scheduler that hands a reserved device to another claim before it sees the reservation."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from claims.lifecycle import conflicts
from claims.lifecycle.beat import resume_claim_requests
from claims.models import ClaimRequest, ClassPolicy
from claims.requests.quota import tenant_usage
from claims.requests.services import submit_request
from claims.requests.specs import ClaimInput
from kube.kinds import Kind
from portal.models import AuditEvent

pytestmark = pytest.mark.django_db(transaction=True)


def _reservation(bob, name: str = "held") -> ClaimRequest:
    ClassPolicy.objects.get_or_create(device_class_name="gpu.nvidia.com", mode="reservation")
    return submit_request(
        user=bob,
        claim=ClaimInput(namespace="gpu-test1", name=name, device_class_name="gpu.nvidia.com"),
    )


def _age(request: ClaimRequest) -> None:
    ClaimRequest.objects.filter(pk=request.pk).update(
        updated_at=timezone.now() - timedelta(minutes=5)
    )


def test_an_apply_while_the_api_server_is_unreachable_completes_when_it_returns(live, bob):
    emulator, cluster, _ = live
    emulator.fail_next(100, status=503, path="resourceclaims")
    request = _reservation(bob)
    request.refresh_from_db()
    assert request.state == ClaimRequest.State.ALLOCATING  # waiting, not lost, not failed
    assert request.allocation  # the devices are chosen and held meanwhile
    emulator.clear_faults()
    _age(request)
    assert resume_claim_requests() == 1
    request.refresh_from_db()
    assert request.state == ClaimRequest.State.APPLIED
    claim = cluster.get(Kind.RESOURCE_CLAIMS, "held", "gpu-test1")
    assert claim["status"]["allocation"] == request.allocation


def test_a_worker_killed_mid_apply_resumes_without_a_duplicate_or_a_loss(live, bob):
    emulator, cluster, _ = live
    # The claim is created, then the worker dies before writing its status.
    emulator.fail_next(100, status=503, path="resourceclaims/held/status")
    request = _reservation(bob)
    request.refresh_from_db()
    assert request.state == ClaimRequest.State.ALLOCATING
    chosen = request.allocation
    emulator.clear_faults()
    _age(request)
    resume_claim_requests()
    request.refresh_from_db()
    assert request.state == ClaimRequest.State.APPLIED
    assert request.allocation == chosen  # the same devices: nothing chosen twice
    listed, _ = cluster.list_all(Kind.RESOURCE_CLAIMS, namespace="gpu-test1")
    assert [c["metadata"]["name"] for c in listed].count("held") == 1
    assert resume_claim_requests() == 0  # nothing left behind


def test_a_conflicting_scheduler_allocation_is_detected_resolved_and_recorded(live, bob):
    _, cluster, resync = live
    request = _reservation(bob)
    request.refresh_from_db()
    ours = request.allocation["devices"]["results"][0]
    # The scheduler had not seen our write and gave the same device to a pod's claim.
    other = cluster.create(
        Kind.RESOURCE_CLAIMS,
        {
            "metadata": {"name": "scheduled-meanwhile", "namespace": "gpu-test3"},
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]
                }
            },
        },
    )
    other["status"] = {
        "allocation": {
            "devices": {"results": [{**ours, "request": "gpu"}]},
            "nodeSelector": request.allocation.get("nodeSelector"),
        }
    }
    cluster.replace_status(Kind.RESOURCE_CLAIMS, other)
    resync()
    assert conflicts.conflicted_reservations() == [str(request.pk)]
    assert conflicts.verify_reservation(str(request.pk)) == "conflict: moved"
    request.refresh_from_db()
    assert request.conflicts == 1
    moved = request.allocation["devices"]["results"][0]
    assert (moved["pool"], moved["device"]) != (ours["pool"], ours["device"])
    claim = cluster.get(Kind.RESOURCE_CLAIMS, "held", "gpu-test1")
    assert claim["status"]["allocation"] == request.allocation
    event = AuditEvent.objects.get(action=AuditEvent.Action.CLAIM_CONFLICT)
    assert event.before["held_by"] == ["gpu-test3/scheduled-meanwhile"]
    resync()
    assert conflicts.conflicted_reservations() == []
    assert conflicts.verify_reservation(str(request.pk)) == "ok"


def test_a_claim_created_directly_in_the_cluster_counts_against_the_quota(team_a, live):
    _, cluster, resync = live
    before = tenant_usage(team_a).get("gpu.nvidia.com")
    cluster.create(
        Kind.RESOURCE_CLAIMS,
        {
            "metadata": {"name": "made-with-kubectl", "namespace": "gpu-test1"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpus",
                            "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2},
                        }
                    ]
                }
            },
        },
    )
    resync()
    after = tenant_usage(team_a)["gpu.nvidia.com"]
    assert after.devices == (before.devices if before else 0) + 2
    assert after.claims == (before.claims if before else 0) + 1
    assert after.memory_bytes - (before.memory_bytes if before else 0) == 2 * 81559 * 2**20
