"""Every page and endpoint that counts free devices says what the availability module says, and
the allocator gives out each device they call free (issue 22, item 5).

A cluster (the demo's, or a seeded random one: GPUs carved into MIG-like placements that share
counters, media-extension placements that cannot all fit, plain GPUs, devices shared by
capacity, taints, incomplete pools; claims holding whole devices, shares, partitions and
admin access) goes into the API emulator and through the mirror as the watchers bring it in.
The expected answer is ``dra.allocator.availability`` on the objects as the cluster serves
them. Then, through HTTP: the dashboard, the device class list and pages, the device list, the
node list, pages and topology, the API's nodes, devices and device classes, the New claim
preview and the fragmentation advisor. Last, every device (on the demo cluster, a sample of each
state) is asked for alone, by a claim naming it by a unique attribute, from the portal's warm
allocation index: the free and shared ones are granted, the others are not.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from apiemulator import Emulator
from claims.capacity.index import index, reset_index
from dra.allocator import build_cluster
from dra.allocator.availability import Holding, State, device_availability
from dra.features import PORTAL_FEATURES
from dra.model import parse_allocated_results, parse_claim, parse_slice
from harness.fixtures import fixture_objects
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.kinds import Kind
from mirror.classes import refresh_class_matches
from tests.conftest import _resync
from tests.devices.cluster_data import allocated_claim

DRIVER = "gpu.example.com"
TAG = "dra.test/id"  # a unique attribute on every device, for claims naming exactly one
PROBE_CLASS = "probe.dra.test"
SEEDS = range(4)
SAMPLE = 12  # devices per state the allocator is asked about on the demo cluster (all elsewhere)
DeviceKey = tuple[str, str, str]


# --- clusters ----------------------------------------------------------------------------------


def _attributes(kind: str, uuid: str, **more: str) -> dict[str, Any]:
    return {
        "type": {"string": kind},
        "uuid": {"string": uuid},
        **{name: {"string": value} for name, value in more.items()},
    }


def _counters(slices: range, **more: int) -> dict[str, Any]:
    counters = {f"memory-slice-{n}": {"value": "1"} for n in slices}
    counters.update({name: {"value": str(value)} for name, value in more.items()})
    return counters


# MIG-like placements of a 4-slice GPU: (profile, size in memory slices, starts, media engines).
PLACEMENTS = [
    ("1g.10gb", 1, (0, 1, 2, 3), 0),
    ("1g.10gb+me", 1, (0, 1, 2, 3), 1),
    ("2g.20gb", 2, (0, 2), 0),
    ("4g.40gb", 4, (0,), 0),
]


def random_cluster(rng: random.Random) -> list[dict[str, Any]]:
    """Nodes with one pool of ``gpu.example.com`` each, device classes, and claims."""
    objects: list[dict[str, Any]] = [
        _device_class("gpu.example.com", "gpu"),
        _device_class("mig.example.com", "mig"),
        _device_class("vgpu.example.com", "vgpu"),
    ]
    held: list[tuple[str, dict[str, Any]]] = []
    nodes = rng.randint(2, 4)
    for n in range(nodes):
        node = f"node-{n}"
        counter_sets, devices = [], []
        for g in range(rng.randint(1, 3)):
            uuid = f"GPU-{n}-{g}"
            gpu: dict[str, Any] = {
                "name": f"gpu-{g}",
                "attributes": _attributes("gpu", uuid),
                "capacity": {"memory": {"value": "40Gi"}},
            }
            devices.append(gpu)
            if rng.random() < 0.35:
                continue  # a GPU that cannot be partitioned: no counters
            counter_set = f"gpu-{g}-counter-set"
            counter_sets.append({"name": counter_set, "counters": _counters(range(4), ofa=1)})
            gpu["consumesCounters"] = [
                {"counterSet": counter_set, "counters": _counters(range(4), ofa=1)}
            ]
            for profile, size, starts, media in PLACEMENTS:
                if rng.random() < 0.25:
                    continue
                slug = profile.replace(".", "").replace("+", "-")
                for start in starts:
                    devices.append(
                        {
                            "name": f"gpu-{g}-mig-{slug}-{start}",
                            "attributes": _attributes(
                                "mig",
                                f"MIG-{n}-{g}-{profile}-{start}",
                                profile=profile,
                                parentUUID=uuid,
                            ),
                            "capacity": {"memory": {"value": f"{10 * size}Gi"}},
                            "consumesCounters": [
                                {
                                    "counterSet": counter_set,
                                    "counters": _counters(
                                        range(start, start + size), **({"ofa": 1} if media else {})
                                    ),
                                }
                            ],
                        }
                    )
        for v in range(rng.choice([0, 0, 1, 2])):
            devices.append(
                {
                    "name": f"vgpu-{v}",
                    "attributes": _attributes("vgpu", f"VGPU-{n}-{v}"),
                    "allowMultipleAllocations": True,
                    "capacity": {
                        "memory": {
                            "value": "16Gi",
                            "requestPolicy": {"default": "4Gi", "validRange": {"min": "1Gi"}},
                        }
                    },
                }
            )
        for device in devices:
            if rng.random() < 0.08:
                effect = rng.choice(["NoSchedule", "NoExecute"])
                device["taints"] = [{"key": "example.com/ecc", "value": "bad", "effect": effect}]
        incomplete = rng.random() < 0.1  # the driver has not published every slice yet
        count = 3 if incomplete else 2
        objects.append(_slice(f"{node}-counters", node, count, sharedCounters=counter_sets))
        objects.append(_slice(f"{node}-devices", node, count, devices=devices))
        held += [(node, device) for device in devices]
    shared = [item for item in held if item[1].get("allowMultipleAllocations")]
    whole = [item for item in held if not item[1].get("allowMultipleAllocations")]
    holders = rng.sample(whole, k=min(len(whole), rng.randint(1, 3 * nodes)))
    holders += [item for item in shared for _ in range(rng.choice([0, 1, 1, 2]))]
    for number, (node, device) in enumerate(holders):
        objects.append(_claim(number, node, device, rng))
    return objects


def _device_class(name: str, kind: str) -> dict[str, Any]:
    expression = f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].type == "{kind}"'
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def _slice(name: str, node: str, count: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": count},
            **{key: value for key, value in spec.items() if value},
        },
    }


def _claim(index: int, node: str, device: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    kind = device["attributes"]["type"]["string"]
    result: dict[str, Any] = {
        "request": "r",
        "driver": DRIVER,
        "pool": node,
        "device": device["name"],
    }
    exactly: dict[str, Any] = {"deviceClassName": f"{kind}.example.com"}
    if device.get("allowMultipleAllocations"):
        result["shareID"] = f"00000000-0000-4000-8000-{index:012d}"
        result["consumedCapacity"] = {"memory": rng.choice(["4Gi", "8Gi", "12Gi"])}
    elif rng.random() < 0.15:
        result["adminAccess"] = True
        exactly["adminAccess"] = True
    requests = [{"name": "r", "exactly": exactly}]
    return allocated_claim(f"held-{index}", "gpu-test1", node, requests, [result])


def tagged(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects with ``dra.test/id`` on every device: "<slice>/<device>"."""
    objects = copy.deepcopy(objects)
    for obj in objects:
        if obj["kind"] == "ResourceSlice":
            for device in obj["spec"].get("devices") or []:
                device.setdefault("attributes", {})[TAG] = {
                    "string": f"{obj['metadata']['name']}/{device['name']}"
                }
    return objects


# --- what the availability module says ---------------------------------------------------------


class Expected:
    """The availability of every device of the cluster as it serves its objects, and which
    devices each device class matches (its CEL selectors, evaluated by the DRA core)."""

    def __init__(self, listed: dict[Kind, list[dict[str, Any]]]) -> None:
        slices, claims = listed[Kind.RESOURCE_SLICES], listed[Kind.RESOURCE_CLAIMS]
        parsed = [parse_slice(item, item["metadata"]["name"]) for item in slices]
        holdings = [
            Holding(result)
            for claim in claims
            for result in parse_allocated_results(claim, claim["metadata"]["name"])
        ]
        by_slice = device_availability(parsed, holdings, PORTAL_FEATURES)
        self.state: dict[DeviceKey, State] = {}
        self.node: dict[DeviceKey, str] = {}
        self.tag: dict[DeviceKey, str] = {}
        self.profile: dict[DeviceKey, str] = {}
        self.shareable: set[DeviceKey] = set()
        for item in slices:
            spec = item["spec"]
            for device in spec.get("devices") or []:
                key = (spec["driver"], spec["pool"]["name"], device["name"])
                self.state[key] = by_slice[(item["metadata"]["name"], device["name"])].state
                self.node[key] = spec.get("nodeName") or device.get("nodeName") or ""
                self.tag[key] = f"{item['metadata']['name']}/{device['name']}"
                profile = (device.get("attributes") or {}).get("profile") or {}
                self.profile[key] = profile.get("string", "")
                if device.get("allowMultipleAllocations"):
                    self.shareable.add(key)
        cluster, _ = build_cluster(
            {
                "features": {"partitionableDevices": True, "consumableCapacity": True},
                "deviceClasses": listed[Kind.DEVICE_CLASSES],
                "resourceSlices": slices,
            }
        )
        devices = cluster.inventory.devices
        self.members: dict[str, set[DeviceKey]] = {}
        for name, device_class in cluster.classes.items():
            passing, _ = cluster.request_matches(device_class, _one_of(name))
            self.members[name] = {
                (devices[uid][0].driver, devices[uid][0].pool_name, devices[uid][1].name)
                for uid in passing
            }

    def free(self, keys: Any = None) -> int:
        keys = self.state if keys is None else keys
        return sum(1 for key in keys if self.state[key] is State.FREE)

    def free_on(self, node: str, keys: Any = None) -> int:
        keys = self.state if keys is None else keys
        return sum(1 for key in keys if self.node[key] == node and self.state[key] is State.FREE)

    @property
    def nodes(self) -> set[str]:
        return {node for node in self.node.values() if node}


def _one_of(device_class: str, *selectors: str) -> Any:
    """The parsed request of a claim for one device of the class passing ``selectors``."""
    return (
        parse_claim(
            {
                "metadata": {"name": "probe", "namespace": "gpu-test1", "uid": "probe"},
                "spec": _spec(device_class, *selectors),
            },
            "probe",
        )
        .requests[0]
        .exactly
    )


def _spec(device_class: str, *selectors: str) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": text}} for text in selectors]
    return {"devices": {"requests": [{"name": "one", "exactly": exactly}]}}


# --- reading the pages -------------------------------------------------------------------------


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def table_rows(html: str) -> Iterator[list[str]]:
    """Each ``<tbody>`` row's cells, as text."""
    for body in re.findall(r"<tbody[^>]*>(.*?)</tbody>", html, re.S):
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S):
            yield [text_of(cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


def get(client: Any, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def devices_match(count: int, device_class: str) -> str:
    """The preview's "N devices of <class> match"."""
    if count == 1:
        return f"1 device of {device_class} matches"
    return f"{count} devices of {device_class} match"


def check_the_pages(client: Any, api: Any, expected: Expected) -> None:
    every_free = expected.free()

    dashboard = get(client, "/")
    assert re.search(
        rf'href="/devices/\?state=free"><div class="stat-value">{every_free}</div>', dashboard
    ), "dashboard: free devices"
    for name, members in expected.members.items():
        if members:
            wanted = f"{name} {expected.free(members)} free of {len(members)}"
            assert wanted in text_of(dashboard), f"dashboard: {wanted}"

    listed = {row[0]: row for row in table_rows(get(client, "/device-classes/"))}
    for name, members in expected.members.items():
        assert listed[name][-2:] == [str(len(members)), str(expected.free(members))], name
        page = text_of(get(client, f"/device-classes/{name}/"))
        assert f"Matching devices {len(members)} ({expected.free(members)} free)" in page, name
    classes = {item["name"]: item for item in api.get("/api/v1/device-classes/").json()["results"]}
    for name, members in expected.members.items():
        assert classes[name]["free_device_count"] == expected.free(members), name

    devices = get(client, "/devices/?state=free")
    paged = re.search(r"\d+–\d+ of (\d+)", text_of(devices))
    badges = devices.count('<td class="state-cell"><span class="badge state-free">')
    assert (int(paged[1]) if paged else badges) == every_free, "device list: state=free"
    assert api.get("/api/v1/devices/?state=free&limit=1").json()["count"] == every_free
    exported = get(api, "/api/v1/devices/export/?state=free")
    free_keys = {
        (row["driver"], row["pool"], row["name"]) for row in map(json.loads, exported.splitlines())
    }
    assert free_keys == {key for key, state in expected.state.items() if state is State.FREE}

    nodes = {row[0]: row for row in table_rows(get(client, "/nodes/"))}
    api_nodes = {
        item["name"]: item for item in api.get("/api/v1/nodes/?limit=500").json()["results"]
    }
    for node in expected.nodes:
        free = expected.free_on(node)
        # Node, Ready, GPUs, then devices and each state, free first.
        assert nodes[node][3:5] == [str(sum(n == node for n in expected.node.values())), str(free)]
        assert api_nodes[node]["free_count"] == free, node
        detail = get(client, f"/nodes/{node}/")
        counts = re.search(r'data-testid="node-state-counts">(.*?)</p>', detail, re.S)
        assert counts is not None and (free == 0 or f"{free} free" in text_of(counts[1])), node
        drawn = re.findall(
            r'data-device="([^"]+)" data-state="([^"]+)"', get(client, f"/nodes/{node}/topology/")
        )
        named = defaultdict(set)  # a name may repeat across the node's drivers
        for key, where in expected.node.items():
            if where == node:
                named[key[2]].add(expected.state[key].value)
        for name, state in drawn:
            assert state in named[name], (node, name, state)


def check_the_preview(client: Any, expected: Expected) -> None:
    for name, members in expected.members.items():
        html = get_preview(client, name)
        text = text_of(html)
        assert devices_match(len(members), name) in text, (name, text[:300])
        free = expected.free(members)
        assert f"; {free} {'is' if free == 1 else 'are'} free now." in text, name
        table = re.search(r'<table[^>]*data-testid="preview-nodes".*?</table>', html, re.S)
        assert (table is not None) == any(expected.node[key] for key in members), name
        for row in table_rows(table[0] if table else ""):
            node, matching, free_here = row[:3]
            assert int(matching) == sum(expected.node[key] == node for key in members), name
            assert int(free_here) == expected.free_on(node, members), (name, node)
            if len(row) > 3 and row[3].rstrip("+").isdigit():
                assert int(row[3].rstrip("+")) <= int(free_here), (name, node)


def get_preview(client: Any, device_class: str) -> str:
    response = client.post(
        "/claims/requests/preview/",
        {
            "namespace": "gpu-test1",
            "name": "free-counts",
            "device_class": device_class,
            "count": "1",
            "sharing": "claim",
        },
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    return response.content.decode()


def check_the_fragmentation_advisor(api: Any, expected: Expected) -> None:
    """A node never takes more claims of one partition than it has free, and takes one whole
    GPU as often as it has free GPUs of the class (each GPU has counters of its own)."""
    advice = api.get("/api/v1/fragmentation/").json()
    for node_advice in advice["nodes"]:
        node = node_advice["node"]
        for entry in node_advice["classes"]:
            members = expected.members[entry["device_class"]]
            for fit in entry["fits"]:
                shape = fit["shape"]
                if shape["kind"] == "partition":
                    placements = {k for k in members if expected.profile[k] == shape["profile"]}
                    assert fit["fits"] <= expected.free_on(node, placements), (node, shape["key"])
                elif shape["count"] == 1 and members & expected.shareable:
                    # A device shared by capacity takes a claim per share it has room for.
                    usable = {k for k in members if expected.state[k] is State.SHARED}
                    least = expected.free_on(node, members) + len(
                        {k for k in usable if expected.node[k] == node}
                    )
                    assert fit["fits"] >= least, (node, shape["key"])
                elif shape["count"] == 1:
                    assert fit["fits"] == expected.free_on(node, members), (node, shape["key"])


def probed(expected: Expected, sample: int | None) -> list[tuple[DeviceKey, State]]:
    """Every device, or ``sample`` of each state (seeded)."""
    found = sorted(expected.state.items())
    if sample is None:
        return found
    rng = random.Random(0)
    by_state: dict[State, list[tuple[DeviceKey, State]]] = defaultdict(list)
    for item in found:
        by_state[item[1]].append(item)
    return [
        item for items in by_state.values() for item in rng.sample(items, min(sample, len(items)))
    ]


def check_the_allocator(
    emulator: Emulator, resync: Any, expected: Expected, sample: int | None
) -> None:
    """Each device alone (or a sample of each state), from the portal's warm index: granted
    exactly when free or shared."""
    probe_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "spec": {}}
    emulator.load([{**probe_class, "metadata": {"name": PROBE_CLASS}}])
    resync()
    reset_index()
    warm = index()
    warm.catch_up()
    assert warm.cluster is not None
    for key, state in probed(expected, sample):
        spec = _spec(PROBE_CLASS, f'device.attributes["dra.test"].id == "{expected.tag[key]}"')
        node = expected.node[key] or None
        outcome = warm.cluster.allocate([warm.parse("gpu-test1", "probe", spec)], node)
        granted = outcome.allocations is not None
        assert granted == (state in (State.FREE, State.SHARED)), (key, state, outcome.error)


# --- the cases ---------------------------------------------------------------------------------


@pytest.fixture
def mirrored(db, settings, team_a):
    """``mirrored(objects)``: the objects in a fresh API emulator and the mirror (as the
    watchers bring them in); returns the emulator, the objects it serves by kind, and a resync."""
    settings.CLAIMS_PREVIEW_FIT_BUDGET_MS = 600_000
    settings.FRAGMENTATION_BUDGET_MS = 600_000
    with ExitStack() as stack:

        def start(objects: list[dict[str, Any]]):
            emulator = stack.enter_context(Emulator(port=0))
            emulator.load(tagged(objects))
            settings.KUBE_API_SERVER = emulator.url
            settings.KUBECONFIG = ""
            cluster = stack.enter_context(
                Cluster(ClusterConfig(server=emulator.url, read_timeout=5))
            )

            def resync() -> None:
                _resync(cluster)
                refresh_class_matches()  # what the watchers schedule after slices/classes change

            resync()
            reset_index()
            listed = {
                kind: cluster.list_all(kind)[0]
                for kind in (Kind.RESOURCE_SLICES, Kind.RESOURCE_CLAIMS, Kind.DEVICE_CLASSES)
            }
            return emulator, listed, resync

        yield start
        reset_index()


def test_on_the_demo_cluster_every_free_count_is_availabilitys(mirrored, client_as, api_as, bob):
    emulator, listed, resync = mirrored(fixture_objects())
    expected = Expected(listed)
    check_the_pages(client_as(bob), api_as(bob), expected)
    check_the_preview(client_as(bob), expected)
    # The advisor's answers on these fixtures are checked against the allocator in
    # tests/claims/test_fragmentation.py, and every fixture device's state in
    # tests/dra/test_availability.py: a sample here.
    check_the_allocator(emulator, resync, expected, sample=SAMPLE)
    assert Counter(expected.state.values())[State.BLOCKED] == 44  # the A100's partitions and GPUs


@pytest.mark.parametrize("seed", SEEDS)
def test_on_random_clusters_every_free_count_is_availabilitys(
    seed, mirrored, client_as, api_as, bob
):
    emulator, listed, resync = mirrored(random_cluster(random.Random(seed)))
    expected = Expected(listed)
    check_the_pages(client_as(bob), api_as(bob), expected)
    check_the_preview(client_as(bob), expected)
    check_the_fragmentation_advisor(api_as(bob), expected)
    check_the_allocator(emulator, resync, expected, sample=None)


def test_the_random_clusters_reach_every_state():
    seen: dict[State, int] = defaultdict(int)
    for seed in SEEDS:
        objects = random_cluster(random.Random(seed))
        slices = [
            parse_slice(o, o["metadata"]["name"]) for o in objects if o["kind"] == "ResourceSlice"
        ]
        holdings = [
            Holding(result)
            for o in objects
            if o["kind"] == "ResourceClaim"
            for result in parse_allocated_results(o, o["metadata"]["name"])
        ]
        for found in device_availability(slices, holdings, PORTAL_FEATURES).values():
            seen[found.state] += 1
    assert set(seen) == set(State), dict(seen)
