"""A long-lived Cluster's device availability follows what it commits and what replaces its
usage: the free devices the portal's index counts (issue 22, item 5)."""

from __future__ import annotations

from dra.allocator import AllocatedState, build_cluster
from dra.allocator.availability import State
from dra.model import parse_claim

from .cases import (
    allocated_claim,
    case,
    claim,
    device,
    fixture_items,
    node,
    resource_slice,
    result,
)

A100 = "dgx-a100-01"
PARTITION = 'device.attributes["gpu.nvidia.com"].profile == "1g.5gb"'


def a100_cluster():
    slices = [o for o in fixture_items("nvidia-a100-mig.json") if o["kind"] == "ResourceSlice"]
    classes = [o for o in fixture_items("deviceclasses.json") if o["kind"] == "DeviceClass"]
    nodes = [{"metadata": {"name": A100, "labels": {}}}]
    cluster, _ = build_cluster(case(claims=[], slices=slices, classes=classes, nodes=nodes))
    return cluster


def uid_of(cluster, name: str) -> int:
    return next(d.uid for _, d in cluster.inventory.devices if d.name == name)


def one_partition():
    spec = {
        "devices": {
            "requests": [
                {
                    "name": "p",
                    "exactly": {
                        "deviceClassName": "mig.nvidia.com",
                        "selectors": [{"cel": {"expression": PARTITION}}],
                    },
                }
            ]
        }
    }
    return parse_claim({"metadata": {"name": "p", "namespace": "d", "uid": "p"}, "spec": spec}, "p")


def test_a_committed_partition_blocks_its_gpu_and_putting_usage_back_frees_it():
    cluster = a100_cluster()
    gpu = uid_of(cluster, "gpu-0")
    assert gpu not in cluster.not_free()

    outcome = cluster.allocate([one_partition()], A100)
    assert outcome.allocations is not None
    [result] = outcome.allocations[0].results
    assert result.candidate.device.name.startswith("gpu-0-mig-")
    cluster.commit(outcome.allocations)

    taken = uid_of(cluster, result.candidate.device.name)
    assert {gpu, taken} <= cluster.not_free()
    assert cluster.availability([gpu])[gpu].state is State.BLOCKED
    assert cluster.availability([taken])[taken].state is State.ALLOCATED

    cluster.replace_usage({("gpu.nvidia.com", A100)}, AllocatedState())
    assert not {gpu, taken} & cluster.not_free()
    assert cluster.availability([gpu])[gpu].state is State.FREE


def many_pool_case(allocated: list[dict] | None = None) -> dict:
    """Four nodes with a pool of three GPUs each, and a claim for one GPU."""
    slices = [
        resource_slice(
            name=f"slice-{n}",
            pool=f"pool-{n}",
            node_name=f"node-{n}",
            devices=[device(f"gpu-{g}") for g in range(3)],
        )
        for n in range(4)
    ]
    return case(
        slices=slices,
        nodes=[node(f"node-{n}") for n in range(4)],
        allocated=allocated,
        node_name=None,
    )


def named(cluster, uids) -> set[tuple[str, str]]:
    """(pool, device name) of devices given by uid: uids differ between two clusters."""
    return {(s.pool_name, d.name) for s, d in cluster.inventory.devices if d.uid in uids}


def test_usage_replaced_pool_by_pool_agrees_with_a_cluster_built_from_the_same_usage():
    """The index changes usage a pool at a time (``replace_usage``) and by ``commit``; what a
    long-lived cluster counts as free must equal a cluster built from scratch on the same
    usage, whatever the order (the per-pool bookkeeping of keys in use)."""
    import random

    from dra.allocator.search import AllocatedState
    from dra.model import parse_claim as parse

    one_gpu = parse(claim(name="one"), "one")
    pools = [("gpu.example.com", f"pool-{n}") for n in range(4)]
    keys = [(driver, pool, f"gpu-{g}") for driver, pool in pools for g in range(3)]
    for seed in range(6):
        chooser = random.Random(seed)
        cluster, _ = build_cluster(many_pool_case())
        truth: set[tuple[str, str, str]] = set()
        for _ in range(40):
            if chooser.random() < 0.4:
                outcome = cluster.allocate([one_gpu], None)
                if outcome.allocations:
                    cluster.commit(outcome.allocations)
                    truth |= {r.candidate.key for r in outcome.allocations[0].results}
            else:
                changed = set(chooser.sample(pools, chooser.randint(1, 2)))
                state = AllocatedState()
                state.in_use = {
                    k for k in keys if (k[0], k[1]) in changed and chooser.random() < 0.5
                }
                cluster.replace_usage(changed, state)
                truth = {k for k in truth if (k[0], k[1]) not in changed} | state.in_use
            assert cluster.allocated.in_use == truth
            fresh, _ = build_cluster(
                many_pool_case([allocated_claim(*(result(d, pool=p) for _, p, d in sorted(truth)))])
            )
            request = one_gpu.requests[0].exactly
            assert named(cluster, cluster.not_free()) == named(fresh, fresh.not_free())
            assert named(cluster, cluster.free_matching(cluster.classes["gpu"], request)) == (
                named(fresh, fresh.free_matching(fresh.classes["gpu"], request))
            )
