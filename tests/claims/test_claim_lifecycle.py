"""The request → apply → release journey against the emulator, in both modes."""

from __future__ import annotations

import pytest

from claims.models import REQUEST_ID_LABEL, RESERVATION_FINALIZER, ClaimRequest, ClassPolicy
from claims.requests.services import release_request, submit_request
from claims.requests.specs import ClaimInput
from kube.errors import NotFound
from kube.kinds import Kind

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_reservation_is_allocated_by_the_portal_and_written_to_the_cluster(live, bob):
    _, cluster, resync = live
    ClassPolicy.objects.create(device_class_name="gpu.nvidia.com", mode="reservation")
    request = submit_request(
        user=bob,
        claim=ClaimInput(
            namespace="gpu-test1",
            name="two-h100",
            device_class_name="gpu.nvidia.com",
            count=2,
            constraint="pcie",
        ),
    )
    request.refresh_from_db()
    assert request.state == ClaimRequest.State.APPLIED, request.reason
    claim = cluster.get(Kind.RESOURCE_CLAIMS, "two-h100", "gpu-test1")
    assert claim["metadata"]["labels"][REQUEST_ID_LABEL] == str(request.pk)
    assert RESERVATION_FINALIZER in claim["metadata"]["finalizers"]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert len(results) == 2
    assert results == request.allocation["devices"]["results"]


def test_a_scheduler_mode_claim_is_created_unallocated(live, bob):
    _, cluster, _ = live
    request = submit_request(
        user=bob,
        claim=ClaimInput(
            namespace="gpu-test1", name="one-h100", device_class_name="gpu.nvidia.com"
        ),
    )
    request.refresh_from_db()
    assert request.state == ClaimRequest.State.APPLIED
    claim = cluster.get(Kind.RESOURCE_CLAIMS, "one-h100", "gpu-test1")
    assert "allocation" not in (claim.get("status") or {})
    assert "finalizers" not in claim["metadata"]


def test_releasing_deletes_the_claim(live, bob):
    _, cluster, resync = live
    ClassPolicy.objects.create(device_class_name="gpu.nvidia.com", mode="reservation")
    request = submit_request(
        user=bob,
        claim=ClaimInput(namespace="gpu-test1", name="short", device_class_name="gpu.nvidia.com"),
    )
    resync()
    release_request(user=bob, request=request)
    request.refresh_from_db()
    assert request.state == ClaimRequest.State.RELEASED
    with pytest.raises(NotFound):
        cluster.get(Kind.RESOURCE_CLAIMS, "short", "gpu-test1")
