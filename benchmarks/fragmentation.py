"""Fragmentation advisor benchmark: what it costs to ask the allocator what still fits.

Run: ``.venv/bin/python benchmarks/fragmentation.py`` (``--nodes N`` for another size). Two
clusters, both built in memory from the project's fixtures (no database: the advisor's core
takes a :class:`dra.allocator.Cluster`, which the portal's index holds warm):

* the demo cluster (``devices/fixtures``: two DGX H100, the DGX A100 with MIG, the
  dra-example-driver node) with the demo claims allocated;
* a synthetic cluster of ``--nodes`` nodes (500 by default): four in five are DGX H100 (8 GPUs,
  an NVLink ``cliqueID`` shared by 18 nodes, a random 0-8 GPUs allocated, one node in 20 with a
  tainted GPU), one in five a DGX A100 in DynamicMIG mode with each GPU left free, allocated
  whole, or carved by one of six real MIG layouts (seeded, so runs compare).

For each: every node asked (as after a new inventory, before any answer is kept), per-node
times by node kind (what the node page's panel costs when that node's usage changed), and the
cluster summary from kept answers (a page view when nothing changed).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

import django  # noqa: E402

django.setup()

from benchmarks.mirror import machine  # noqa: E402
from claims.capacity.fragmentation import Probe, advisable, advise, scratch_copy, summarise  # noqa: E402
from dra.allocator import Cluster, build_cluster  # noqa: E402

FIXTURES = ROOT / "devices" / "fixtures"
FEATURES = {
    "adminAccess": True,
    "prioritizedList": True,
    "partitionableDevices": True,
    "consumableCapacity": True,
    "deviceTaints": True,
}
NODES_PER_CLIQUE = 18
# Real A100-40GB layouts (device-name suffixes of the fixture's placements), and "whole".
MIG_LAYOUTS: list[list[str] | None] = [
    [],
    [],
    None,
    ["4g20gb-5-0", "2g10gb-14-4"],
    ["3g20gb-9-0"],
    ["1g5gb-19-0", "1g5gb-19-1", "2g10gb-14-2", "3g20gb-9-4"],
    ["7g40gb-0-0"],
    ["1g10gb-15-0", "1g10gb-15-2", "3g20gb-9-4"],
]


def _items(name: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURES / name).read_text())["items"]


def _held(results: list[dict[str, str]], number: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"held-{number}", "namespace": "bench", "uid": f"held-{number}"},
        "spec": {"devices": {"requests": []}},
        "status": {"allocation": {"devices": {"results": results}}},
    }


def demo_cluster() -> Cluster:
    slices = [
        *_items("nvidia-a100-mig.json"),
        *_items("nvidia-dgx-h100.json"),
        *_items("dra-example-driver.json"),
    ]
    claims = [c for c in _items("claims.json") if (c.get("status") or {}).get("allocation")]
    case = {
        "features": FEATURES,
        "nodes": _items("nodes.json"),
        "deviceClasses": _items("deviceclasses.json"),
        "resourceSlices": slices,
        "allocatedClaims": claims,
        "claims": [],
    }
    return build_cluster(case)[0]


def _renamed(item: dict[str, Any], node: str, number: int) -> dict[str, Any]:
    copied = copy.deepcopy(item)
    copied["metadata"] = {"name": f"{node}-{copied['spec']['driver']}-{number}"}
    copied["spec"]["nodeName"] = node
    copied["spec"]["pool"] = {**copied["spec"]["pool"], "name": node}
    return copied


def synthetic_cluster(nodes: int, seed: int = 10) -> Cluster:
    rng = random.Random(seed)
    h100 = next(
        i for i in _items("nvidia-dgx-h100.json") if i["spec"]["driver"] == "gpu.nvidia.com"
    )
    a100 = [i for i in _items("nvidia-a100-mig.json") if i["spec"]["driver"] == "gpu.nvidia.com"]
    slices: list[dict[str, Any]] = []
    node_objects = []
    held = []
    for index in range(nodes):
        if index % 5 == 4:
            name = f"dgx-a100-{index:04d}"
            slices.extend(_renamed(item, name, n) for n, item in enumerate(a100))
            results = []
            for gpu in range(8):
                layout = rng.choice(MIG_LAYOUTS)
                names = [f"gpu-{gpu}"] if layout is None else [f"gpu-{gpu}-mig-{p}" for p in layout]
                results.extend(
                    {"request": "r", "driver": "gpu.nvidia.com", "pool": name, "device": d}
                    for d in names
                )
        else:
            name = f"dgx-h100-{index:04d}"
            gpus = _renamed(h100, name, 0)
            for number, device in enumerate(gpus["spec"]["devices"]):
                device.pop("taints", None)
                device["attributes"]["uuid"] = {"string": f"GPU-{index:08x}-{number:04x}"}
                device["attributes"]["cliqueID"] = {
                    "string": f"cluster-a.{index // NODES_PER_CLIQUE}"
                }
            if index % 20 == 0:
                gpus["spec"]["devices"][5]["taints"] = [
                    {"key": "gpu.nvidia.com/xid", "value": "48", "effect": "NoSchedule"}
                ]
            slices.append(gpus)
            taken = rng.sample(range(8), rng.choice([0, 0, 1, 2, 2, 3, 4, 6, 8]))
            results = [
                {"request": "r", "driver": "gpu.nvidia.com", "pool": name, "device": f"gpu-{n}"}
                for n in sorted(taken)
            ]
        node_objects.append({"metadata": {"name": name, "labels": {}}})
        if results:
            held.append(_held(results, index))
    case = {
        "features": FEATURES,
        "nodes": node_objects,
        "deviceClasses": _items("deviceclasses.json"),
        "resourceSlices": slices,
        "allocatedClaims": held,
        "claims": [],
    }
    return build_cluster(case)[0]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def measure(label: str, cluster: Cluster) -> None:
    started = time.perf_counter()
    found = advisable(cluster)  # on the warm cluster: its CEL results are kept there
    found_cold = time.perf_counter() - started
    started = time.perf_counter()
    advisable(cluster)
    found_warm = time.perf_counter() - started
    started = time.perf_counter()
    scratch = scratch_copy(cluster)
    copied = time.perf_counter() - started
    report = advise(scratch, found=found)
    print(f"\n{label}: {len(report.nodes)} nodes, {len(report.shapes)} shapes")
    print(f"  what to advise on (classes by node): {_ms(found_cold)} cold, {_ms(found_warm)} warm")
    print(f"  scratch copy of the index's cluster: {_ms(copied)}")
    print(
        f"  every node asked (cold cache): {report.seconds:.2f} s, "
        f"{report.allocations} allocator calls ({_ms(report.seconds / report.allocations)} each)"
    )
    by_kind: dict[str, list[float]] = {}
    for node in report.nodes:
        kind = "MIG (A100)" if any(c.kind == "partition" for c in node.classes) else "whole GPUs"
        by_kind.setdefault(kind, []).append(node.seconds)
    for kind, times in sorted(by_kind.items()):
        times.sort()
        p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
        print(
            f"  per node, {kind} ({len(times)}): median {_ms(statistics.median(times))}, "
            f"p95 {_ms(p95)}, max {_ms(times[-1])}"
        )
    # One node alone, as the node page's panel computes it on a miss (scratch copy + probe).
    for node in (report.nodes[0].node, report.nodes[-1].node):
        started = time.perf_counter()
        Probe(scratch_copy(cluster), 10.0).advise(node, found)
        print(f"  node panel on a miss ({node}): {_ms(time.perf_counter() - started)}")
    # Every answer kept: the cluster-wide summary alone (what a page view costs on a hit).
    started = time.perf_counter()
    summarise(found, report.nodes)
    print(f"  cluster summary from kept answers: {_ms(time.perf_counter() - started)}")
    for sentence in report.sentences[:4]:
        print(f"  · {sentence}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    args = parser.parse_args()
    print(machine())
    measure("Demo cluster (devices/fixtures)", demo_cluster())
    started = time.perf_counter()
    cluster = synthetic_cluster(args.nodes)
    print(f"\n(synthetic cluster parsed in {time.perf_counter() - started:.2f} s)")
    measure(f"Synthetic cluster, {args.nodes} nodes", cluster)


if __name__ == "__main__":
    main()
