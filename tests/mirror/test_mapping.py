"""Object → row mapping: realistic objects map cleanly, malformed ones are flagged, never lost."""

from __future__ import annotations

import pytest

from harness.fixtures import fixture_objects
from kube.kinds import Kind
from mirror.mapping import map_object

KIND_OF = {
    "ResourceSlice": Kind.RESOURCE_SLICES,
    "ResourceClaim": Kind.RESOURCE_CLAIMS,
    "DeviceClass": Kind.DEVICE_CLASSES,
    "ResourceClaimTemplate": Kind.RESOURCE_CLAIM_TEMPLATES,
    "Node": Kind.NODES,
    "Namespace": Kind.NAMESPACES,
    "Pod": Kind.PODS,
}


def slice_named(prefix: str) -> dict:
    return next(
        o
        for o in fixture_objects()
        if o["kind"] == "ResourceSlice" and o["metadata"]["name"].startswith(prefix)
    )


def test_every_fixture_object_maps_without_problems():
    for obj in fixture_objects():
        assert map_object(KIND_OF[obj["kind"]], obj).problems == [], obj["metadata"]["name"]


def test_an_h100_device_gets_its_model_memory_and_pci_columns():
    mapped = map_object(Kind.RESOURCE_SLICES, slice_named("00000-gpu.nvidia.com-dgx-h100-01"))
    gpu = mapped.children["devices"][0]
    assert gpu["model_name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["memory_bytes"] == 81559 * 1024**2
    assert gpu["pci_bus_id"] == "0000:1b:00.0"
    assert gpu["node_name"] == "dgx-h100-01"
    assert mapped.fields["node_selection"] == "nodeName"


def test_mig_partitions_point_at_their_parent_gpu():
    obj = next(
        o
        for o in fixture_objects()
        if o["kind"] == "ResourceSlice"
        and o["spec"].get("nodeName") == "dgx-a100-01"
        and o["spec"].get("devices")
    )
    devices = map_object(Kind.RESOURCE_SLICES, obj).children["devices"]
    full = next(d for d in devices if d["device_type"] == "gpu")
    partitions = [d for d in devices if d["device_type"] == "mig"]
    assert len(partitions) == 25
    assert {d["parent_uuid"] for d in partitions} == {full["uuid"]}
    assert all(d["consumes_counters"] for d in devices)


def test_a_counter_only_slice_yields_counter_sets_and_no_devices():
    obj = next(
        o
        for o in fixture_objects()
        if o["kind"] == "ResourceSlice" and o["spec"].get("sharedCounters")
    )
    mapped = map_object(Kind.RESOURCE_SLICES, obj)
    assert mapped.children["devices"] == []
    assert len(mapped.children["counter_sets"]) == 8


def test_list_items_get_their_apiversion_and_kind_back():
    obj = slice_named("00000-gpu.nvidia.com-dgx-h100-01")
    bare = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    raw = map_object(Kind.RESOURCE_SLICES, bare).fields["raw"]
    assert (raw["apiVersion"], raw["kind"]) == ("resource.k8s.io/v1", "ResourceSlice")


def test_unknown_fields_are_kept_in_the_raw_object():
    obj = slice_named("00000-gpu.nvidia.com-dgx-h100-01")
    obj["spec"]["futureField"] = {"from": "kubernetes 1.40"}
    assert map_object(Kind.RESOURCE_SLICES, obj).fields["raw"]["spec"]["futureField"]


def test_legacy_device_plugin_gpus_are_read_from_the_node():
    node = next(o for o in fixture_objects() if o["metadata"]["name"] == "gpu-legacy-01")
    assert map_object(Kind.NODES, node).fields["extended_resources"] == {"nvidia.com/gpu": "4"}


def test_admin_access_results_and_consumers_become_rows():
    claim = next(
        o
        for o in fixture_objects()
        if o["kind"] == "ResourceClaim" and o["metadata"]["namespace"] == "admin-access"
    )
    mapped = map_object(Kind.RESOURCE_CLAIMS, claim)
    assert len(mapped.children["allocated_devices"]) == 8
    assert all(row["admin_access"] for row in mapped.children["allocated_devices"])


@pytest.mark.parametrize(
    ("kind", "obj", "problem"),
    [
        (
            Kind.RESOURCE_SLICES,
            {"metadata": {"uid": "u", "name": "s", "resourceVersion": "1"}},
            "spec is missing",
        ),
        (
            Kind.RESOURCE_SLICES,
            {
                "metadata": {"uid": "u", "name": "s", "resourceVersion": "1"},
                "spec": {
                    "driver": "d",
                    "pool": {"name": "p", "generation": "x"},
                    "devices": "oops",
                },
            },
            "spec.pool.generation / resourceSliceCount are not integers",
        ),
        (
            Kind.RESOURCE_SLICES,
            {
                "metadata": {"uid": "u", "name": "s", "resourceVersion": "1"},
                "spec": {
                    "driver": "d",
                    "pool": {"name": "p"},
                    "devices": [{"name": "a"}, {"name": "a"}, {"nope": 1}],
                },
            },
            "spec.devices[1]: device name a repeats",
        ),
        (Kind.RESOURCE_CLAIMS, {"metadata": "garbage"}, "metadata is missing or not an object"),
        (Kind.DEVICE_CLASSES, ["not", "an", "object"], "object is a list, not a JSON object"),
        (
            Kind.RESOURCE_SLICES,
            {
                "metadata": {"uid": "u", "name": "s", "resourceVersion": "1"},
                "spec": {
                    "driver": "d",
                    "pool": {"name": "p"},
                    "devices": [{"name": "a", "capacity": {"memory": {"value": "lots"}}}],
                },
            },
            "spec.devices[0].capacity[memory].value",
        ),
    ],
)
def test_malformed_objects_are_flagged_not_rejected(kind, obj, problem):
    mapped = map_object(kind, obj)
    assert any(p.startswith(problem) for p in mapped.problems), mapped.problems
    assert "raw" in mapped.fields


def test_a_huge_object_maps_in_full():
    devices = [
        {"name": f"d-{i}", "attributes": {f"a{j}": {"string": "x" * 64} for j in range(32)}}
        for i in range(128)
    ]
    obj = {
        "metadata": {"uid": "u", "name": "s", "resourceVersion": "1"},
        "spec": {
            "driver": "d",
            "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "allNodes": True,
            "devices": devices,
        },
    }
    mapped = map_object(Kind.RESOURCE_SLICES, obj)
    assert mapped.problems == []
    assert len(mapped.children["devices"]) == 128
