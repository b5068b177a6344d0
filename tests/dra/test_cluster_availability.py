"""A long-lived Cluster's device availability follows what it commits and what replaces its
usage: the free devices the portal's index counts (issue 22, item 5)."""

from __future__ import annotations

from dra.allocator import AllocatedState, build_cluster
from dra.allocator.availability import State
from dra.model import parse_claim

from .cases import case, fixture_items

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
