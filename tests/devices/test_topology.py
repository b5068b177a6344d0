"""Grouping a node's devices by NUMA node → PCIe root → NVLink clique, with MIG placements."""

from __future__ import annotations

import pytest

from devices.models import Device, DeviceState, SharedCounterSet
from devices.topology import CounterUse, Reading, node_topology
from devices.topology_drawing import MAX_WIDTH, draw

pytestmark = pytest.mark.django_db


def topology_of(node: str, **kwargs):
    devices = list(Device.objects.on_node(node))
    pools = {(d.driver, d.pool_name) for d in devices}
    counter_sets = [
        cs for cs in SharedCounterSet.objects.all() if (cs.driver, cs.pool_name) in pools
    ]
    return node_topology(devices, counter_sets=counter_sets, **kwargs)


def test_a_dgx_h100_has_two_numa_nodes_of_four_pcie_roots_with_one_gpu_each(mirrored_cluster):
    topology = topology_of("dgx-h100-01")
    assert [numa.label for numa in topology.numa_nodes] == ["NUMA node 0", "NUMA node 1"]
    grouped = {
        numa.key: {root.key: [gpu.device.name for gpu in root.gpus] for root in numa.roots}
        for numa in topology.numa_nodes
    }
    assert grouped == {
        "0": {
            "pci0000:15": ["gpu-0"],
            "pci0000:37": ["gpu-1"],
            "pci0000:48": ["gpu-2"],
            "pci0000:59": ["gpu-3"],
        },
        "1": {
            "pci0000:97": ["gpu-4"],
            "pci0000:b7": ["gpu-5"],
            "pci0000:c8": ["gpu-6"],
            "pci0000:d9": ["gpu-7"],
        },
    }
    # the driver publishes no NVLink clique for a DGX H100: one "unknown" clique per root
    assert not topology.has_cliques
    assert {c.label for n in topology.numa_nodes for r in n.roots for c in r.cliques} == {
        "NVLink clique unknown"
    }
    # the compute-domain driver's channel and daemon are listed, not drawn
    assert sorted(d.name for d in topology.others) == ["channel-0", "daemon-0"]
    assert not topology.has_partitions


def test_an_nvlink_clique_attribute_groups_gpus_within_their_pcie_root(mirrored_cluster):
    devices = list(Device.objects.on_node("dgx-h100-01").filter(device_type="gpu"))
    for device in devices:
        clique = "a" if device.name in ("gpu-0", "gpu-1") else "b"
        device.attributes["cliqueID"] = {"string": f"cluster.{clique}"}
        device.attributes["resource.kubernetes.io/pcieRoot"] = {"string": "pci0000:00"}
    topology = node_topology(devices)
    assert topology.has_cliques
    root = topology.numa_nodes[0].roots[0]
    assert [(c.label, [g.device.name for g in c.gpus]) for c in root.cliques] == [
        ("NVLink clique cluster.a", ["gpu-0", "gpu-1"]),
        ("NVLink clique cluster.b", ["gpu-2", "gpu-3"]),
    ]


def test_an_a100_mig_gpu_holds_its_placements_and_counts_what_its_held_ones_use(
    mirrored_cluster,
):
    topology = topology_of("dgx-a100-01")
    assert [numa.key for numa in topology.numa_nodes] == ["1", "3", "5", "7"]
    numa3 = topology.numa_nodes[1]
    assert [(r.key, [g.device.name for g in r.gpus]) for r in numa3.roots] == [
        ("pci0000:00", ["gpu-0", "gpu-1"])
    ]
    gpus = {gpu.device.name: gpu for gpu in topology.gpus}
    assert len(gpus) == 8  # placements are inside their GPU, never boxes of their own
    gpu0 = gpus["gpu-0"]
    assert len(gpu0.partitions) == 25
    assert gpu0.slice_count == 8
    placements = {p.device.name: (p.profile, p.start, p.size) for p in gpu0.partitions}
    assert placements["gpu-0-mig-7g40gb-0-0"] == ("7g.40gb", 0, 8)
    assert placements["gpu-0-mig-3g20gb-9-4"] == ("3g.20gb", 4, 4)
    assert placements["gpu-0-mig-2g10gb-14-2"] == ("2g.10gb", 2, 2)
    assert placements["gpu-0-mig-1g5gb-19-6"] == ("1g.5gb", 6, 1)
    assert placements["gpu-0-mig-1g5gb-me-20-3"] == ("1g.5gb+me", 3, 1)
    # largest first
    assert gpu0.partitions[0].profile == "7g.40gb"
    assert gpu0.partitions[-1].profile == "1g.5gb+me"
    # gpu-test4's claim holds 1g.5gb at 0 and 1, 2g.10gb at 2–3 and 3g.20gb at 4–7
    held = sorted((p.start, p.size) for p in gpu0.held_partitions)
    assert held == [(0, 1), (1, 1), (2, 2), (4, 4)]
    assert gpu0.device.state == DeviceState.BLOCKED
    assert gpu0.counters == [
        CounterUse("Memory slices", 8, 8),
        CounterUse("SMs", 14 + 14 + 28 + 42, 98),
        CounterUse("Memory", gpu0.counters[2].used, 40320 * 2**20, "bytes"),
    ]
    assert gpu0.counters[2].used == (4864 + 4864 + 9984 + 20096) * 2**20
    untouched = gpus["gpu-4"]
    assert untouched.held_partitions == []
    assert [c.used for c in untouched.counters] == [0, 0, 0]


def test_devices_that_publish_no_topology_are_grouped_under_unknown(mirrored_cluster):
    topology = topology_of("dra-example-driver-cluster-worker")
    assert [numa.label for numa in topology.numa_nodes] == ["NUMA node unknown"]
    (root,) = topology.numa_nodes[0].roots
    assert root.label == "PCIe root unknown"
    assert [g.device.name for g in root.gpus] == [f"gpu-{i}" for i in range(8)]
    assert topology.others == []


def test_a_partition_without_a_published_placement_is_still_drawn_in_its_gpu(mirrored_cluster):
    gpu = Device.objects.get(node_name="dgx-a100-01", name="gpu-2")
    mig = Device.objects.get(node_name="dgx-a100-01", name="gpu-2-mig-1g10gb-15-2")
    mig.consumes_counters = []
    topology = node_topology([gpu, mig])
    (box,) = topology.gpus
    (partition,) = box.partitions
    assert (partition.start, partition.size) == (None, 1)
    shape = draw(topology).gpus[0]
    assert shape.partitions[0].title.endswith("placement not published · Free")
    mig.attributes["placementStart"] = {"int": 6}
    mig.attributes["placementSize"] = {"int": 2}
    (partition,) = node_topology([gpu, mig]).gpus[0].partitions
    assert (partition.start, partition.size) == (6, 2)


def test_readings_shade_boxes_and_missing_or_stale_ones_say_no_data(mirrored_cluster):
    devices = list(Device.objects.on_node("dgx-h100-01").filter(device_type="gpu"))
    key = ("gpu.nvidia.com", "dgx-h100-01")
    readings = {
        (*key, "gpu-0"): Reading(
            gpu_util=50, memory_percent=10.0, is_stale=False, is_simulated=False
        ),
        (*key, "gpu-1"): Reading(
            gpu_util=80, memory_percent=None, is_stale=True, is_simulated=False
        ),
    }
    shapes = {s.box.device.name: s for s in draw(node_topology(devices, readings=readings)).gpus}
    assert (shapes["gpu-0"].util_text, shapes["gpu-0"].has_data) == ("50 %", True)
    assert shapes["gpu-0"].shade_h == round(shapes["gpu-0"].h / 2)
    assert (shapes["gpu-1"].util_text, shapes["gpu-1"].has_data) == ("stale (80 %)", False)
    assert shapes["gpu-1"].shade_h == 0
    assert (shapes["gpu-2"].util_text, shapes["gpu-2"].has_data) == ("no data", False)


def test_the_drawing_keeps_groups_inside_each_other_and_within_the_width(mirrored_cluster):
    for node in ("dgx-h100-01", "dgx-a100-01", "dra-example-driver-cluster-worker"):
        drawing = draw(topology_of(node))
        assert drawing.width <= MAX_WIDTH
        numa = [f for f in drawing.frames if f.level == "numa"]
        for gpu in drawing.gpus:
            assert any(
                f.x < gpu.x
                and gpu.x + gpu.w < f.x + f.w
                and f.y < gpu.y
                and gpu.y + gpu.h < f.y + f.h
                for f in numa
            )
            for part in gpu.partitions:
                assert part.x > 0 and part.x + part.w < gpu.w
                assert gpu.grid_y <= part.y and part.y + part.h <= gpu.grid_y + gpu.grid_h
