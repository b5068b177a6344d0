"""Lists: selectors, pagination with consistent snapshots, resourceVersion semantics, 410."""

from __future__ import annotations

from typing import Any

import pytest

from apiemulator import Emulator
from kube.client import Cluster
from kube.errors import Gone, Invalid
from kube.kinds import Kind


def slice_(name: str, node: str, driver: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name, "labels": labels},
        "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1}},
    }


@pytest.fixture
def slices(emulator: Emulator) -> None:
    emulator.load(
        [
            slice_("s-a", "node-1", "gpu.nvidia.com", {"tier": "gold", "zone": "a"}),
            slice_("s-b", "node-1", "gpu.example.com", {"tier": "silver", "zone": "b"}),
            slice_("s-c", "node-2", "gpu.nvidia.com", {"tier": "bronze"}),
        ]
    )


def names(page: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in page["items"]]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("tier=gold", ["s-a"]),
        ("tier==gold", ["s-a"]),
        ("tier!=gold", ["s-b", "s-c"]),
        ("tier in (gold, silver)", ["s-a", "s-b"]),
        ("tier notin (gold,silver)", ["s-c"]),
        ("zone", ["s-a", "s-b"]),
        ("!zone", ["s-c"]),
        ("zone,tier in (silver)", ["s-b"]),
    ],
)
@pytest.mark.usefixtures("slices")
def test_it_filters_by_label_selector(cluster: Cluster, selector: str, expected: list[str]) -> None:
    page = cluster.list_page(Kind.RESOURCE_SLICES, label_selector=selector)
    assert names(page) == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("spec.nodeName=node-1", ["s-a", "s-b"]),
        ("spec.driver=gpu.nvidia.com", ["s-a", "s-c"]),
        ("spec.nodeName=node-1,spec.driver!=gpu.nvidia.com", ["s-b"]),
        ("metadata.name=s-c", ["s-c"]),
    ],
)
@pytest.mark.usefixtures("slices")
def test_it_filters_slices_by_field_selector(
    cluster: Cluster, selector: str, expected: list[str]
) -> None:
    page = cluster.list_page(Kind.RESOURCE_SLICES, field_selector=selector)
    assert names(page) == expected


def test_it_rejects_an_unsupported_field_selector(cluster: Cluster) -> None:
    with pytest.raises(Invalid, match="field label not supported"):
        cluster.list_page(Kind.RESOURCE_SLICES, field_selector="spec.bogus=1")


def test_it_lists_pods_across_namespaces_by_node(cluster: Cluster) -> None:
    cluster.create(Kind.NAMESPACES, {"metadata": {"name": "other"}})
    for namespace, pod, node in [
        ("default", "p1", "n1"),
        ("other", "p2", "n1"),
        ("other", "p3", "n2"),
    ]:
        cluster.create(
            Kind.PODS, {"metadata": {"name": pod}, "spec": {"nodeName": node}}, namespace=namespace
        )
    on_n1 = cluster.list_page(Kind.PODS, field_selector="spec.nodeName=n1")
    in_other = cluster.list_page(
        Kind.PODS, field_selector="metadata.namespace=other", label_selector=""
    )

    assert names(on_n1) == ["p1", "p2"]
    assert names(in_other) == ["p2", "p3"]
    assert names(cluster.list_page(Kind.PODS, namespace="other")) == ["p2", "p3"]


def test_it_paginates_with_limit_and_continue(emulator: Emulator, cluster: Cluster) -> None:
    emulator.load([slice_(f"s-{i:02d}", f"n{i}", "d", {}) for i in range(23)])
    seen: list[str] = []
    page = cluster.list_page(Kind.RESOURCE_SLICES, limit=10)
    list_rv = page["metadata"]["resourceVersion"]
    remaining = [page["metadata"].get("remainingItemCount")]
    seen += names(page)
    while page["metadata"].get("continue"):
        page = cluster.list_page(
            Kind.RESOURCE_SLICES, limit=10, continue_=page["metadata"]["continue"]
        )
        assert page["metadata"]["resourceVersion"] == list_rv
        remaining.append(page["metadata"].get("remainingItemCount"))
        seen += names(page)

    assert seen == [f"s-{i:02d}" for i in range(23)]
    assert remaining == [13, 3, None]


def test_pages_come_from_one_consistent_snapshot(emulator: Emulator, cluster: Cluster) -> None:
    emulator.load([slice_(f"s-{i}", f"n{i}", "d", {}) for i in range(4)])
    first = cluster.list_page(Kind.RESOURCE_SLICES, limit=2)
    emulator.load([slice_("s-9", "n9", "d", {})])
    cluster.delete(Kind.RESOURCE_SLICES, "s-3")
    rest = cluster.list_page(Kind.RESOURCE_SLICES, limit=2, continue_=first["metadata"]["continue"])
    assert names(rest) == ["s-2", "s-3"]


def test_a_continue_token_after_compaction_is_gone(emulator: Emulator, cluster: Cluster) -> None:
    emulator.load([slice_(f"s-{i}", f"n{i}", "d", {}) for i in range(4)])
    first = cluster.list_page(Kind.RESOURCE_SLICES, limit=2)
    cluster.create(Kind.NAMESPACES, {"metadata": {"name": "newer"}})
    emulator.compact()

    with pytest.raises(Gone) as caught:
        cluster.list_page(Kind.RESOURCE_SLICES, limit=2, continue_=first["metadata"]["continue"])
    assert caught.value.code == 410
    assert caught.value.reason == "Expired"


def test_an_exact_resource_version_lists_the_past(emulator: Emulator, cluster: Cluster) -> None:
    emulator.load([slice_("s-1", "n1", "d", {"v": "1"})])
    before = cluster.list_page(Kind.RESOURCE_SLICES)["metadata"]["resourceVersion"]
    cluster.patch(Kind.RESOURCE_SLICES, "s-1", {"metadata": {"labels": {"v": "2"}}})
    cluster.create(Kind.RESOURCE_SLICES, slice_("s-2", "n2", "d", {}))

    past = cluster.list_page(
        Kind.RESOURCE_SLICES, resource_version=before, resource_version_match="Exact"
    )
    now = cluster.list_page(Kind.RESOURCE_SLICES, resource_version="0")

    assert [i["metadata"]["labels"] for i in past["items"]] == [{"v": "1"}]
    assert past["metadata"]["resourceVersion"] == before
    assert names(now) == ["s-1", "s-2"]


def test_the_list_resource_version_is_the_latest_write(cluster: Cluster) -> None:
    created = cluster.create(Kind.NAMESPACES, {"metadata": {"name": "latest"}})
    listed = cluster.list_page(Kind.DEVICE_CLASSES)
    assert listed["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
