"""The portal's device states against the allocator: free means it allocates, and only then.

For every device, a claim asking for exactly that device (a class that matches every device, a
selector on a unique attribute added for the test, the default capacity, no tolerations) is
allocated on the device's node, on a cluster built by the ``manage.py allocate`` contract's own
case parser (and, for a sample, through the whole contract). The device's
availability must agree: free or shared → allocated; allocated, blocked or tainted →
unsatisfiable. Checked on every fixture and on randomized clusters with shared counters,
capacity shares, taints, admin access, incomplete pools and superseded generations.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from dra.allocator import build_cluster, outcome_json, run_case
from dra.allocator.availability import Holding, State, device_availability
from dra.features import PORTAL_FEATURES
from dra.model import parse_allocated_results, parse_claim, parse_slice

FIXTURES = Path(__file__).resolve().parents[2] / "devices" / "fixtures"
FEATURES = {
    "adminAccess": True,
    "prioritizedList": True,
    "partitionableDevices": True,
    "consumableCapacity": True,
    "deviceTaints": True,
}
MATCH_ALL = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "any"}}


def _items(name: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURES / name).read_text())["items"]


def _tagged(slices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The slices with a unique ``dra.test/id`` attribute on every device."""
    tagged = copy.deepcopy(slices)
    for item in tagged:
        for device in item["spec"].get("devices") or []:
            device.setdefault("attributes", {})["dra.test/id"] = {
                "string": f"{item['metadata']['name']}/{device['name']}"
            }
    return tagged


def _asks_for(identity: str) -> dict[str, Any]:
    expression = f'device.attributes["dra.test"].id == "{identity}"'
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "probe", "namespace": "default", "uid": "probe"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "one",
                        "exactly": {
                            "deviceClassName": "any",
                            "selectors": [{"cel": {"expression": expression}}],
                        },
                    }
                ]
            }
        },
    }


def assert_states_agree_with_the_allocator(
    slices: list[dict[str, Any]], claims: list[dict[str, Any]]
) -> dict[State, int]:
    parsed = [parse_slice(item, item["metadata"]["name"]) for item in slices]
    holdings = [
        Holding(result, len((claim.get("status") or {}).get("reservedFor") or []))
        for claim in claims
        for result in parse_allocated_results(claim, claim["metadata"]["name"])
    ]
    states = device_availability(parsed, holdings, PORTAL_FEATURES)
    tagged = _tagged(slices)
    clusters: dict[str, Any] = {}
    seen: dict[State, int] = {}
    for item in slices:
        node_name = item["spec"].get("nodeName")
        if not node_name:
            continue
        for device in item["spec"].get("devices") or []:
            availability = states[(item["metadata"]["name"], device["name"])]
            seen[availability.state] = seen.get(availability.state, 0) + 1
            probe = _asks_for(f"{item['metadata']['name']}/{device['name']}")
            if node_name not in clusters:
                # The contract's own case parsing, once per node; each probe is then allocated
                # against the same inventory and in-use state (nothing is committed).
                clusters[node_name], _ = build_cluster(
                    {
                        "kubernetesVersion": "1.36",
                        "features": FEATURES,
                        "nodes": [{"metadata": {"name": node_name, "labels": {}}}],
                        "deviceClasses": [MATCH_ALL],
                        "resourceSlices": tagged,
                        "allocatedClaims": claims,
                        "claims": [probe],
                    }
                )
            cluster = clusters[node_name]
            outcome = cluster.allocate([parse_claim(probe, "probe")], node_name)
            status = outcome_json(device["name"], outcome, cluster)["status"]
            expected = "allocated" if availability.is_allocatable else "unsatisfiable"
            assert status == expected, (
                item["metadata"]["name"],
                device["name"],
                availability,
                outcome,
            )
    return seen


@pytest.mark.parametrize(
    "fixture",
    ["nvidia-a100-mig.json", "nvidia-dgx-h100.json", "dra-example-driver.json"],
)
def test_every_fixture_devices_state_is_what_the_allocator_does(fixture):
    objects = _items(fixture)
    slices = [o for o in objects if o["kind"] == "ResourceSlice"]
    drivers = {(s["spec"]["driver"], s["spec"]["pool"]["name"]) for s in slices}
    claims = [
        o
        for o in _items("claims.json")
        if o["kind"] == "ResourceClaim"
        and any(
            (r["driver"], r["pool"]) in drivers
            for r in (((o.get("status") or {}).get("allocation") or {}).get("devices") or {}).get(
                "results"
            )
            or []
        )
    ]
    seen = assert_states_agree_with_the_allocator(slices, claims)
    assert seen.get(State.FREE)


def test_the_a100s_gpus_whose_partitions_are_allocated_are_blocked_with_the_reason():
    slices = [o for o in _items("nvidia-a100-mig.json") if o["kind"] == "ResourceSlice"]
    claims = [o for o in _items("claims.json") if o["kind"] == "ResourceClaim"]
    parsed = [parse_slice(item, item["metadata"]["name"]) for item in slices]
    holdings = [
        Holding(result)
        for claim in claims
        for result in parse_allocated_results(claim, claim["metadata"]["name"])
    ]
    states = {
        device: availability
        for (_, device), availability in device_availability(
            parsed, holdings, PORTAL_FEATURES
        ).items()
    }
    for gpu in ("gpu-0", "gpu-1"):
        assert states[gpu].state == State.BLOCKED
        assert states[gpu].reason.startswith(f"counters used by {gpu}-mig-")
    assert states["gpu-2"].state == State.FREE


# --- randomized clusters ---------------------------------------------------------------------


def _random_cluster(rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One node, one to three pools: GPUs with partitions consuming shared counters (1.35+
    layout), multi-allocatable devices with capacity, taints, sometimes an incomplete pool or a
    superseded generation; claims holding random devices (whole, shares, admin access)."""
    slices: list[dict[str, Any]] = []
    devices_of: list[tuple[str, str, dict[str, Any]]] = []
    for pool_index in range(rng.randint(1, 3)):
        pool = f"pool-{pool_index}"
        generation = rng.randint(1, 2)
        gpus = rng.randint(1, 3)
        counter_sets = [
            {
                "name": f"gpu-{g}-counters",
                "counters": {"memory": {"value": "8Gi"}, "slices": {"value": "4"}},
            }
            for g in range(gpus)
        ]
        devices: list[dict[str, Any]] = []
        for g in range(gpus):
            devices.append(
                {
                    "name": f"gpu-{g}",
                    "consumesCounters": [
                        {
                            "counterSet": f"gpu-{g}-counters",
                            "counters": {"memory": {"value": "8Gi"}, "slices": {"value": "4"}},
                        }
                    ],
                }
            )
            for p in range(rng.randint(0, 4)):
                size = rng.choice([1, 2])
                devices.append(
                    {
                        "name": f"gpu-{g}-part-{p}",
                        "consumesCounters": [
                            {
                                "counterSet": f"gpu-{g}-counters",
                                "counters": {
                                    "memory": {"value": f"{2 * size}Gi"},
                                    "slices": {"value": str(size)},
                                },
                            }
                        ],
                    }
                )
        for s in range(rng.randint(0, 2)):
            device: dict[str, Any] = {
                "name": f"shared-{s}",
                "allowMultipleAllocations": True,
                "capacity": {
                    "memory": {
                        "value": "10Gi",
                        "requestPolicy": {"default": "4Gi", "validRange": {"min": "1Gi"}},
                    }
                },
            }
            devices.append(device)
        for device in devices:
            if rng.random() < 0.1:
                device["taints"] = [
                    {
                        "key": "example.com/broken",
                        "value": "yes",
                        "effect": rng.choice(["NoSchedule", "NoExecute", "None"]),
                    }
                ]
        split = rng.random() < 0.5
        count = 2 if split else 1
        published = count - (1 if split and rng.random() < 0.15 else 0)
        bodies = (
            [{"sharedCounters": counter_sets, "devices": []}, {"devices": devices}]
            if split
            else [{"sharedCounters": counter_sets}, {"devices": devices}]
        )
        if not split:
            count = 2
            published = 2 - (1 if rng.random() < 0.1 else 0)
        for index, body in enumerate(bodies[:published]):
            spec = {
                "driver": "gpu.example.com",
                "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
                "nodeName": "node-1",
                **{k: v for k, v in body.items() if v},
            }
            slices.append({"metadata": {"name": f"{pool}-{index}-g{generation}"}, "spec": spec})
        if generation == 2 and rng.random() < 0.3:  # a stale slice of the old generation
            spec = {
                "driver": "gpu.example.com",
                "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                "nodeName": "node-1",
                "devices": [{"name": "old-gpu"}],
            }
            slices.append({"metadata": {"name": f"{pool}-old"}, "spec": spec})
        devices_of += [(pool, d["name"], d) for d in devices]
    claims = []
    for index, (pool, name, device) in enumerate(
        rng.sample(devices_of, k=min(len(devices_of), rng.randint(0, 6)))
    ):
        result: dict[str, Any] = {
            "request": "r",
            "driver": "gpu.example.com",
            "pool": pool,
            "device": name,
        }
        if device.get("allowMultipleAllocations"):
            result["shareID"] = f"00000000-0000-0000-0000-00000000000{index}"
            result["consumedCapacity"] = {"memory": rng.choice(["4Gi", "6Gi", "3Gi"])}
        elif rng.random() < 0.15:
            result["adminAccess"] = True
        claims.append(
            {
                "metadata": {
                    "name": f"held-{index}",
                    "namespace": "default",
                    "uid": f"held-{index}",
                },
                "spec": {
                    "devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "any"}}]}
                },
                "status": {
                    "allocation": {
                        "devices": {"results": [result]},
                        "nodeSelector": {
                            "nodeSelectorTerms": [
                                {
                                    "matchFields": [
                                        {
                                            "key": "metadata.name",
                                            "operator": "In",
                                            "values": ["node-1"],
                                        }
                                    ]
                                }
                            ]
                        },
                    }
                },
            }
        )
    return slices, claims


@pytest.mark.parametrize("seed", range(40))
def test_on_randomized_clusters_the_state_is_what_the_allocator_does(seed):
    slices, claims = _random_cluster(random.Random(seed))
    assert_states_agree_with_the_allocator(slices, claims)


def test_the_randomized_clusters_reach_every_state():
    seen: set[State] = set()
    for seed in range(40):
        slices, claims = _random_cluster(random.Random(seed))
        parsed = [parse_slice(item, item["metadata"]["name"]) for item in slices]
        holdings = [
            Holding(result)
            for claim in claims
            for result in parse_allocated_results(claim, claim["metadata"]["name"])
        ]
        seen |= {a.state for a in device_availability(parsed, holdings, PORTAL_FEATURES).values()}
    assert seen == set(State)


def test_the_whole_contract_agrees_on_a_blocked_and_a_free_a100():
    slices = [o for o in _items("nvidia-a100-mig.json") if o["kind"] == "ResourceSlice"]
    claims = [o for o in _items("claims.json") if o["kind"] == "ResourceClaim"]
    statuses = {}
    for device in ("gpu-0", "gpu-2"):
        home = next(
            item
            for item in slices
            if any(d["name"] == device for d in item["spec"].get("devices", []))
        )
        statuses[device] = run_case(
            {
                "name": device,
                "kubernetesVersion": "1.36",
                "features": FEATURES,
                "nodes": [{"metadata": {"name": "dgx-a100-01", "labels": {}}}],
                "deviceClasses": [MATCH_ALL],
                "resourceSlices": _tagged(slices),
                "allocatedClaims": claims,
                "claims": [_asks_for(f"{home['metadata']['name']}/{device}")],
                "node": "dgx-a100-01",
            }
        )["status"]
    assert statuses == {"gpu-0": "unsatisfiable", "gpu-2": "allocated"}
