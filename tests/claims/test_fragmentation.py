"""The fragmentation advisor's answers are the allocator's: on the DGX A100 MIG fixture with
some partitions and GPUs taken, and on the DGX H100 fixture with and without an NVLink clique
attribute, each "fits" answer allocates that many claims at once with the allocator and one
more fails; each "does not fit" fails."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from claims.capacity.fragmentation import (
    MAX_FITS,
    ShapeKind,
    advise,
    advise_node,
    scratch_copy,
    shapes_of,
)
from dra.allocator import Cluster, build_cluster

FIXTURES = Path(__file__).resolve().parents[2] / "devices" / "fixtures"
FEATURES = {
    "adminAccess": True,
    "prioritizedList": True,
    "partitionableDevices": True,
    "consumableCapacity": True,
    "deviceTaints": True,
}
A100 = "dgx-a100-01"
H100_1, H100_2 = "dgx-h100-01", "dgx-h100-02"


def _items(name: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURES / name).read_text())["items"]


def _allocated(driver: str, pool: str, devices: list[str]) -> dict[str, Any]:
    results = [{"request": "r", "driver": driver, "pool": pool, "device": d} for d in devices]
    return {
        "metadata": {"name": f"held-{len(devices)}", "namespace": "x", "uid": "held"},
        "spec": {"devices": {"requests": []}},
        "status": {"allocation": {"devices": {"results": results}}},
    }


def _cluster(
    slices: list[dict[str, Any]], allocated: list[dict[str, Any]] | None = None
) -> Cluster:
    case = {
        "features": FEATURES,
        "nodes": _items("nodes.json"),
        "deviceClasses": _items("deviceclasses.json"),
        "resourceSlices": slices,
        "allocatedClaims": allocated or [],
        "claims": [],
    }
    cluster, _ = build_cluster(case)
    return cluster


# Three GPUs each keep one compute slice and memory slices 6-7 free (a 4g.20gb on slices 0-3
# and a 2g.10gb on 4-5 taken); the other five GPUs are allocated whole.
PARTLY_CARVED = [f"gpu-{n}-mig-4g20gb-5-0" for n in range(3)] + [
    f"gpu-{n}-mig-2g10gb-14-4" for n in range(3)
]
WHOLE_TAKEN = [f"gpu-{n}" for n in range(3, 8)]


@pytest.fixture
def a100() -> Cluster:
    return _cluster(
        _items("nvidia-a100-mig.json"),
        [_allocated("gpu.nvidia.com", A100, PARTLY_CARVED + WHOLE_TAKEN)],
    )


def _fits_exactly(cluster: Cluster, shape: Any, node: str, times: int) -> None:
    """``times`` claims of the shape allocate together on the node; with them in use, one
    more does not. (Up to three, also ``times + 1`` together fail: the allocator's search
    proves no other choice of devices leaves more room. Past that, proving a failure by
    search takes the allocator exponential time, as it would the scheduler.)"""
    scratch = scratch_copy(cluster)
    if times:
        claims = [shape.claim(name=f"probe-{n}") for n in range(times)]
        outcome = scratch.allocate(claims, node)
        assert outcome.allocations is not None, (shape.key, times, outcome.error)
        scratch.commit(outcome.allocations)
    if times < MAX_FITS:
        outcome = scratch.allocate([shape.claim(name="one-more")], node)
        assert outcome.allocations is None and outcome.error is None, (shape.key, times + 1)
    if times < 3:
        claims = [shape.claim(name=f"probe-{n}") for n in range(times + 1)]
        outcome = cluster.allocate(claims, node)
        assert outcome.allocations is None and outcome.error is None, (shape.key, times + 1)


def test_it_offers_every_published_mig_profile_and_whole_gpu_counts(a100):
    keys = [shape.key for shape in shapes_of(a100)]
    assert keys == [
        "gpu.nvidia.com:1",
        "gpu.nvidia.com:2",
        "gpu.nvidia.com:4",
        "gpu.nvidia.com:8",
        "mig.nvidia.com:1g.5gb",
        "mig.nvidia.com:1g.5gb+me",
        "mig.nvidia.com:1g.10gb",
        "mig.nvidia.com:2g.10gb",
        "mig.nvidia.com:3g.20gb",
        "mig.nvidia.com:4g.20gb",
        "mig.nvidia.com:7g.40gb",
    ]


def test_on_a_carved_a100_only_the_small_profiles_fit_and_on_three_gpus(a100):
    advice = advise_node(scratch_copy(a100), A100)
    by_class = {entry.device_class: entry for entry in advice.classes}
    mig = by_class["mig.nvidia.com"]
    fits = {fit.shape.profile: fit for fit in mig.fits}
    assert {profile: fit.fits for profile, fit in fits.items()} == {
        "1g.5gb": 3,
        "1g.5gb+me": 3,
        "1g.10gb": 3,
        "2g.10gb": 0,
        "3g.20gb": 0,
        "4g.20gb": 0,
        "7g.40gb": 0,
    }
    assert fits["1g.5gb"].gpus == {"gpu-0": 1, "gpu-1": 1, "gpu-2": 1}
    assert mig.sentence == (
        "3 GPUs each have room for a 1g.5gb, 1g.5gb+me or 1g.10gb; "
        "none can take a 2g.10gb, 3g.20gb, 4g.20gb or 7g.40gb."
    )
    whole = by_class["gpu.nvidia.com"]
    assert whole.largest == 0  # a GPU with partitions taken cannot be had whole
    assert [fit.fits for fit in whole.fits] == [0, 0, 0, 0]
    assert whole.sentence == "None of the 8 GPUs can be allocated."


def test_every_a100_answer_is_what_the_allocator_does(a100):
    advice = advise_node(scratch_copy(a100), A100)
    for entry in advice.classes:
        for fit in entry.fits:
            _fits_exactly(a100, fit.shape, A100, fit.fits)
            outcome = a100.allocate([fit.shape.claim()], A100)
            if fit.is_allocatable:
                assert [r.candidate.device.name for r in outcome.allocations[0].results] == (
                    fit.first
                )


def test_a_free_a100_takes_seven_of_the_smallest_profile_per_gpu():
    cluster = _cluster(_items("nvidia-a100-mig.json"))
    advice = advise_node(scratch_copy(cluster), A100)
    mig = next(entry for entry in advice.classes if entry.kind is ShapeKind.PARTITION)
    smallest = mig.fits[0]
    assert (smallest.shape.profile, smallest.fits) == ("1g.5gb", 56)
    assert smallest.gpus == {f"gpu-{n}": 7 for n in range(8)}
    assert [fit.fits for fit in mig.fits][-1] == 8  # one 7g.40gb per GPU
    whole = next(entry for entry in advice.classes if entry.kind is ShapeKind.WHOLE)
    assert whole.largest == 8
    assert whole.sentence == "Largest allocatable set on this node: 8 GPUs (of 8)."


def test_the_advice_changes_nothing_it_was_computed_on(a100):
    in_use = set(a100.allocated.in_use)
    scratch = scratch_copy(a100)
    advise(scratch)
    assert a100.allocated.in_use == in_use
    assert scratch.allocated.in_use == in_use  # each shape starts from the same usage


def _h100(clique: bool) -> Cluster:
    slices = copy.deepcopy(_items("nvidia-dgx-h100.json"))
    if clique:
        # Two NVLink cliques per node: GPUs 0-3 and 4-7.
        for item in slices:
            for device in item["spec"].get("devices", []):
                if device["name"].startswith("gpu-"):
                    index = int(device["name"].removeprefix("gpu-"))
                    node = item["spec"]["nodeName"]
                    device["attributes"]["cliqueID"] = {"string": f"{node}.{index // 4}"}
    claims = [c for c in _items("claims.json") if (c.get("status") or {}).get("allocation")]
    return _cluster(slices, claims)


def test_without_a_clique_attribute_the_largest_set_is_counted_per_node():
    cluster = _h100(clique=False)
    report = advise(scratch_copy(cluster))
    block = next(b for b in report.largest if b.device_class == "gpu.nvidia.com")
    # dgx-h100-01: gpu-0, 1, 3 allocated; dgx-h100-02: gpu-0, 1, 2 allocated, gpu-5 tainted.
    assert (block.count, block.nodes, block.clique_attribute) == (5, [H100_1], None)
    assert block.sentence == (
        "gpu.nvidia.com: largest allocatable set on one node: 5 GPUs on dgx-h100-01."
    )
    largest = {node.node: node.classes[0].largest for node in report.nodes}
    assert largest == {H100_1: 5, H100_2: 4}


def test_the_largest_nvlink_clique_follows_the_clique_attribute():
    cluster = _h100(clique=True)
    report = advise(scratch_copy(cluster))
    block = next(b for b in report.largest if b.device_class == "gpu.nvidia.com")
    assert block.clique_attribute == "gpu.nvidia.com/cliqueID"
    assert (block.count, block.nodes) == (4, [H100_1])
    assert block.sentence == (
        "gpu.nvidia.com: largest allocatable NVLink clique: 4 GPUs on dgx-h100-01."
    )
    assert (
        "gpu.nvidia.com: no node can take 8 GPUs in one claim on one NVLink clique."
        in report.sentences
    )
    by_node = {node.node: node.classes[0] for node in report.nodes}
    # dgx-h100-02 has four usable GPUs, but only three (4, 6, 7) share a clique.
    assert by_node[H100_2].largest == 3
    fits = {fit.shape.count: fit.fits for fit in by_node[H100_2].fits}
    assert fits == {1: 4, 2: 1, 4: 0, 8: 0}
    for node, entry in by_node.items():
        for fit in entry.fits:
            _fits_exactly(cluster, fit.shape, node, fit.fits)
        four = next(fit.shape for fit in entry.fits if fit.shape.count == 4)
        outcome = cluster.allocate([four.claim(entry.largest)], node)
        assert outcome.allocations is not None
        outcome = cluster.allocate([four.claim(entry.largest + 1)], node)
        assert outcome.allocations is None
    # Without the constraint dgx-h100-02 would give four GPUs to one claim.
    loose = next(s for s in shapes_of(_h100(clique=False)) if s.key == "gpu.nvidia.com:4")
    assert cluster.allocate([loose.claim()], H100_2).allocations is not None
    summary = next(s for s in report.shapes if s.shape.key == "gpu.nvidia.com:4")
    assert summary.nodes == [(H100_1, 1)]


def test_the_cluster_summary_names_where_each_profile_fits(a100):
    report = advise(scratch_copy(a100))
    summary = {s.shape.key: s for s in report.shapes}
    assert summary["mig.nvidia.com:1g.5gb"].nodes == [(A100, 3)]
    assert summary["mig.nvidia.com:1g.5gb"].gpus == 3
    assert summary["mig.nvidia.com:3g.20gb"].sentence == "No GPU can take a 3g.20gb."
    assert report.sentences[-1] == (
        "mig.nvidia.com: 3 GPUs on dgx-a100-01 each have room for a 1g.5gb, 1g.5gb+me or "
        "1g.10gb; none can take a 2g.10gb, 3g.20gb, 4g.20gb or 7g.40gb."
    )
    assert report.allocations > 0


def test_gpus_with_different_room_are_told_apart():
    # gpu-0 keeps slices 4-7 and three compute slices; gpu-1 and gpu-2 as above; the rest whole.
    taken = ["gpu-0-mig-4g20gb-5-0"] + PARTLY_CARVED[1:3] + PARTLY_CARVED[4:] + WHOLE_TAKEN
    cluster = _cluster(_items("nvidia-a100-mig.json"), [_allocated("gpu.nvidia.com", A100, taken)])
    advice = advise_node(scratch_copy(cluster), A100)
    mig = next(entry for entry in advice.classes if entry.kind is ShapeKind.PARTITION)
    assert mig.sentence == (
        "3 GPUs each have room for a 1g.5gb, 1g.5gb+me or 1g.10gb; 1 GPU for a 2g.10gb or "
        "3g.20gb; none can take a 4g.20gb or 7g.40gb."
    )
    for fit in mig.fits:
        _fits_exactly(cluster, fit.shape, A100, fit.fits)
    assert {fit.shape.profile: fit.fits for fit in mig.fits}["1g.5gb"] == 5  # 3 on gpu-0
