"""The warm allocation index follows the mirror without rebuilding, and assumes reservations
in flight."""

from __future__ import annotations

from datetime import timedelta

import pytest

from claims.capacity.index import index
from claims.lifecycle.leases import expire_leases
from claims.models import ClaimRequest, ClassPolicy
from claims.requests.services import submit_request
from claims.requests.specs import ClaimInput, SpecErrors
from kube.kinds import Kind

pytestmark = pytest.mark.django_db(transaction=True)
ONE_H100 = {
    "devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}
}


def _free_h100s() -> int:
    claim = index().parse("x", "probe", ONE_H100)
    _, free, _ = index().matching("gpu.nvidia.com", claim.requests[0].exactly)
    return len(free)


def test_a_claim_allocated_in_the_cluster_updates_the_index_in_place(live):
    _, cluster, resync = live
    free = _free_h100s()
    builds = index().builds
    placement = index().place(index().parse("gpu-test3", "elsewhere", ONE_H100))
    claim = cluster.create(
        Kind.RESOURCE_CLAIMS,
        {"metadata": {"name": "elsewhere", "namespace": "gpu-test3"}, "spec": ONE_H100},
    )
    claim["status"] = {"allocation": placement.allocation}
    cluster.replace_status(Kind.RESOURCE_CLAIMS, claim)
    resync()
    assert _free_h100s() == free - 1
    assert index().builds == builds  # followed the change log, no rebuild
    cluster.delete(Kind.RESOURCE_CLAIMS, "elsewhere", "gpu-test3")
    resync()
    assert _free_h100s() == free


def test_a_reservation_in_flight_is_assumed_until_the_mirror_shows_it(live, bob):
    ClassPolicy.objects.create(device_class_name="gpu.nvidia.com", mode="reservation")
    free = _free_h100s()
    submit_request(
        user=bob,
        claim=ClaimInput(namespace="gpu-test1", name="assumed", device_class_name="gpu.nvidia.com"),
    )
    assert _free_h100s() == free - 1  # not mirrored yet, but never handed out twice


def test_bad_input_is_refused_field_by_field_with_nothing_created(live, bob, carol):
    bad = ClaimInput(
        namespace="gpu-test5",  # team-b's
        name="Not_A_Name",
        device_class_name="no.such.class",
        count=33,
        selectors=("device.attributes['gpu.nvidia.com'].productName ==",),
        lease=None,
    )
    with pytest.raises(SpecErrors) as caught:
        submit_request(user=bob, claim=bad)
    assert set(caught.value.errors) >= {"namespace", "name", "count", "selectors"}
    assert "ERROR: <input>:1:" in caught.value.errors["selectors"][0]
    assert not ClaimRequest.objects.exists()


def test_an_ended_lease_releases_the_claim(live, bob):
    _, cluster, resync = live
    request = submit_request(
        user=bob,
        claim=ClaimInput(
            namespace="gpu-test1",
            name="brief",
            device_class_name="gpu.nvidia.com",
            lease=timedelta(hours=1),
        ),
    )
    request.refresh_from_db()
    assert expire_leases(now=request.expires_at) == 1
    request.refresh_from_db()
    assert request.state == ClaimRequest.State.EXPIRED


def test_a_change_committed_out_of_id_order_is_not_skipped(live):
    _, cluster, _ = live
    from devices.models import InventoryChange
    from mirror.store import load

    free = _free_h100s()
    placement = index().place(index().parse("gpu-test3", "late", ONE_H100))
    driver, pool, _ = next(iter(placement.keys))
    # Three ids taken in order; the middle one's transaction has not committed yet.
    first, late, last = (
        InventoryChange.objects.create(scope="pool", driver="x", pool_name="y").pk for _ in range(3)
    )
    InventoryChange.objects.filter(pk=late).delete()
    index().catch_up()  # the cursor moves past the gap
    claim = cluster.create(
        Kind.RESOURCE_CLAIMS,
        {"metadata": {"name": "late", "namespace": "gpu-test3"}, "spec": ONE_H100},
    )
    claim["status"] = {"allocation": placement.allocation}
    cluster.replace_status(Kind.RESOURCE_CLAIMS, claim)
    load([{**cluster.get(Kind.RESOURCE_CLAIMS, "late", "gpu-test3"), "kind": "ResourceClaim"}])
    # The claim's pool change is the one that commits late, under the earlier id.
    InventoryChange.objects.filter(pk__gt=last).delete()
    InventoryChange.objects.create(id=late, scope="pool", driver=driver, pool_name=pool)
    assert first < late < last
    assert _free_h100s() == free - 1


def test_a_reservation_released_elsewhere_frees_its_devices_in_this_index(live, bob):
    """The allocating worker's own assumption gives way to the request's row, so a release
    done by another process (which cannot touch this one's memory) frees the devices here."""
    ClassPolicy.objects.create(device_class_name="gpu.nvidia.com", mode="reservation")
    free = _free_h100s()
    request = submit_request(
        user=bob,
        claim=ClaimInput(
            namespace="gpu-test1", name="elsewhere", device_class_name="gpu.nvidia.com"
        ),
    )
    assert _free_h100s() == free - 1
    # Another process released it: the row ended and nobody told this index.
    ClaimRequest.objects.filter(pk=request.pk).update(state=ClaimRequest.State.RELEASED)
    assert _free_h100s() == free
