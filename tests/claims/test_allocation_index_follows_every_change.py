"""Every change the warm allocation index follows reaches what it derives from the inventory:
placements, "would it fit" and the class reads see the change at once.

The index keeps one long-lived allocator cluster (with its cached case, matches and node
views) and its own per-class answers. A device class mirrored after the index's first use
once stayed unknown to the cached case: would-it-fit said "does not fit" and every accepted
request failed with "could not retrieve device class gpu.nvidia.com: not found".
"""

from __future__ import annotations

import pytest

from claims.capacity import index as index_module
from claims.capacity.index import Placement, index, reset_index
from claims.requests.fit import would_it_fit
from claims.requests.specs import ClaimInput
from kube.kinds import Kind
from mirror.store import delete_missing

pytestmark = pytest.mark.django_db

H100 = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"
H100_CLASS = f"device.driver == 'gpu.nvidia.com' && {H100}"


def spec(device_class: str, *selectors: str, count: int = 1) -> dict:
    """A claim's spec: ``count`` devices of the class passing the selectors."""
    request = {"name": "g", "exactly": {"deviceClassName": device_class, "count": count}}
    if selectors:
        request["exactly"]["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"devices": {"requests": [request]}}


def place(device_class: str, *selectors: str, count: int = 1) -> Placement:
    claim = index().parse("gpu-test1", "probe", spec(device_class, *selectors, count=count))
    return index().place(claim, explain=False)


def placed(placement: Placement) -> set[tuple[str, str]]:
    """(node, device) of each device the placement would allocate."""
    return {(pool, device) for _, pool, device in placement.keys}


def fits(user, device_class: str) -> bool:
    claim = ClaimInput(namespace="gpu-test1", name="probe", device_class_name=device_class)
    return would_it_fit(user, claim).allocatable


def uuid_of(cluster, node: str, device: str) -> str:
    items, _ = cluster.list_all(
        Kind.RESOURCE_SLICES, field_selector=f"spec.nodeName={node},spec.driver=gpu.nvidia.com"
    )
    found = [d for s in items for d in s["spec"]["devices"] if d["name"] == device]
    return found[0]["attributes"]["uuid"]["string"]


def test_classes_mirrored_after_the_indexs_first_use_are_allocatable(live, bob):
    _, _, resync = live
    delete_missing(Kind.DEVICE_CLASSES, set())  # the watchers have not listed the classes yet
    reset_index()
    assert "not found" in (place("gpu.nvidia.com").error or "")
    resync()  # the classes arrive
    assert place("gpu.nvidia.com").allocation is not None
    assert fits(bob, "gpu.nvidia.com")
    assert "gpu.nvidia.com" in index().class_names()


def test_a_class_created_in_a_running_cluster_is_allocatable(live, bob):
    _, cluster, resync = live
    assert place("gpu.nvidia.com").allocation is not None  # the index is warm
    cluster.create(
        Kind.DEVICE_CLASSES,
        {
            "metadata": {"name": "h100.nvidia.com"},
            "spec": {"selectors": [{"cel": {"expression": H100_CLASS}}]},
        },
    )
    resync()
    placement = place("h100.nvidia.com", count=2)
    assert placement.error is None
    assert {node for node, _ in placed(placement)} <= {"dgx-h100-01", "dgx-h100-02"}
    assert fits(bob, "h100.nvidia.com")
    assert "h100.nvidia.com" in index().class_names()


def test_a_class_narrowed_in_a_running_cluster_is_allocated_as_it_now_is(live):
    _, cluster, resync = live
    assert place("gpu.nvidia.com").allocation is not None
    wanted = uuid_of(cluster, "dgx-h100-02", "gpu-6")
    gpu = cluster.get(Kind.DEVICE_CLASSES, "gpu.nvidia.com")
    gpu["spec"]["selectors"].append(
        {"cel": {"expression": f"device.attributes['gpu.nvidia.com'].uuid == '{wanted}'"}}
    )
    cluster.replace(Kind.DEVICE_CLASSES, gpu)
    resync()
    placement = place("gpu.nvidia.com")
    assert placed(placement) == {("dgx-h100-02", "gpu-6")}, placement.error
    request = index().class_request("gpu.nvidia.com")
    assert index().summary("gpu.nvidia.com", request)[0] == 1


def test_a_class_deleted_in_a_running_cluster_is_no_longer_allocatable(live):
    _, cluster, resync = live
    assert place("gpu.nvidia.com").allocation is not None
    cluster.delete(Kind.DEVICE_CLASSES, "gpu.nvidia.com")
    resync()
    placement = place("gpu.nvidia.com")
    assert placement.allocation is None
    assert "could not retrieve device class gpu.nvidia.com" in (placement.error or "")
    assert "gpu.nvidia.com" not in index().class_names()


def test_slices_added_changed_and_removed_reach_placements(live):
    _, cluster, resync = live
    first = placed(place("gpu.nvidia.com", H100))
    assert {node for node, _ in first} == {"dgx-h100-01"}
    items, _ = cluster.list_all(
        Kind.RESOURCE_SLICES, field_selector="spec.nodeName=dgx-h100-01,spec.driver=gpu.nvidia.com"
    )
    h100_01 = items[0]
    h100_01["spec"]["devices"] = [d for d in h100_01["spec"]["devices"] if d["name"] != "gpu-0"]
    cluster.replace(Kind.RESOURCE_SLICES, h100_01)  # changed: gpu-0 is gone
    resync()
    assert ("dgx-h100-01", "gpu-0") not in placed(place("gpu.nvidia.com", H100, count=7))
    cluster.delete(Kind.RESOURCE_SLICES, h100_01["metadata"]["name"])  # removed
    resync()
    assert {node for node, _ in placed(place("gpu.nvidia.com", H100))} == {"dgx-h100-02"}
    added = {
        "metadata": {"name": "dgx-h100-01-again"},
        "spec": {**h100_01["spec"], "pool": {**h100_01["spec"]["pool"], "generation": 2}},
    }
    cluster.create(Kind.RESOURCE_SLICES, added)  # added
    resync()
    assert {node for node, _ in placed(place("gpu.nvidia.com", H100))} == {"dgx-h100-01"}


def test_a_node_change_reaches_placements(live, monkeypatch):
    _, cluster, resync = live
    monkeypatch.setattr(index_module, "NODE_RELOAD_SECONDS", 0)
    assert {node for node, _ in placed(place("gpu.nvidia.com", H100))} == {"dgx-h100-01"}
    cluster.delete(Kind.NODES, "dgx-h100-01")
    resync()
    assert {node for node, _ in placed(place("gpu.nvidia.com", H100))} == {"dgx-h100-02"}


def test_a_claim_allocated_in_the_cluster_reaches_placements(live):
    _, cluster, resync = live
    placement = place("gpu.nvidia.com", H100)
    claim = cluster.create(
        Kind.RESOURCE_CLAIMS,
        {
            "metadata": {"name": "elsewhere", "namespace": "gpu-test3"},
            "spec": spec("gpu.nvidia.com"),
        },
    )
    claim["status"] = {"allocation": placement.allocation}
    cluster.replace_status(Kind.RESOURCE_CLAIMS, claim)
    resync()
    assert placed(place("gpu.nvidia.com", H100)).isdisjoint(placed(placement))
