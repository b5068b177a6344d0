"""Allocator benchmark: 5,000 DGX H100 nodes (8 GPUs each), 36,000 GPUs already allocated.

Run: ``.venv/bin/python benchmarks/allocator.py``. Builds the scenario synthetically from the
shape of ``fixtures/nvidia-dgx-h100.json`` (per node one ``gpu.nvidia.com`` slice with 8 H100s and
one ``compute-domain.nvidia.com`` slice), prints each figure next to its target and the machine.
The 4,500 nodes first in name order are fully allocated, so a cluster-wide search has to get
past all of them (the worst case for "first node by name").
"""

from __future__ import annotations

import copy
import json
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dra.allocator import build_cluster  # noqa: E402
from dra.cel import compile_selector, device_input  # noqa: E402
from dra.model import parse_claim  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "devices" / "fixtures"

NODES = 5_000
FULL_NODES = 4_500  # 36,000 of the 40,000 GPUs


def _items(name: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURES / name).read_text())["items"]


def build_case() -> dict[str, Any]:
    template = _items("nvidia-dgx-h100.json")
    gpu_slice = next(item for item in template if item["spec"]["driver"] == "gpu.nvidia.com")
    domain_slice = next(
        item for item in template if item["spec"]["driver"] == "compute-domain.nvidia.com"
    )
    slices = []
    nodes = []
    allocated_results = []
    for index in range(NODES):
        name = f"dgx-h100-{index:05d}"
        nodes.append(
            {"metadata": {"name": name, "labels": {"nvidia.com/gpu.clique": f"clique-{index}"}}}
        )
        gpus = copy.deepcopy(gpu_slice)
        gpus["metadata"] = {"name": f"{name}-gpu.nvidia.com"}
        gpus["spec"]["nodeName"] = name
        gpus["spec"]["pool"] = {"name": name, "generation": 1, "resourceSliceCount": 1}
        for number, device in enumerate(gpus["spec"]["devices"]):
            device.pop("taints", None)
            device["attributes"]["uuid"] = {"string": f"GPU-{index:08x}-{number:04x}"}
            device["attributes"]["clique"] = {"string": f"clique-{index}"}
            if index < FULL_NODES:
                allocated_results.append(
                    {
                        "request": "gpu",
                        "driver": "gpu.nvidia.com",
                        "pool": name,
                        "device": device["name"],
                    }
                )
        domain = copy.deepcopy(domain_slice)
        domain["metadata"] = {"name": f"{name}-compute-domain.nvidia.com"}
        domain["spec"]["nodeName"] = name
        domain["spec"]["pool"] = {"name": name, "generation": 1, "resourceSliceCount": 1}
        slices += [gpus, domain]
    return {
        "name": "benchmark",
        "kubernetesVersion": "1.36",
        "features": {"adminAccess": True, "prioritizedList": True},
        "nodes": nodes,
        "deviceClasses": _items("deviceclasses.json"),
        "resourceSlices": slices,
        "allocatedClaims": [
            {"status": {"allocation": {"devices": {"results": allocated_results}}}}
        ],
        "claims": [],
        "node": None,
    }


def claim_object(name: str, count: int, constraint: str | None = None) -> dict[str, Any]:
    """A ResourceClaim as the contract takes it (JSON)."""
    devices: dict[str, Any] = {
        "requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count}}
        ]
    }
    if constraint:
        devices["constraints"] = [{"matchAttribute": constraint}]
    return {"metadata": {"name": name, "namespace": "bench"}, "spec": {"devices": devices}}


COLD_CASES = (
    ("1-GPU claim", "cold-one-gpu", 1, None),
    (
        "8-GPU claim, matchAttribute on the NVLink clique",
        "cold-eight-clique",
        8,
        "gpu.nvidia.com/clique",
    ),
)


def _timed(command: list[str], path: Path, cwd: Path) -> tuple[float, float, dict[str, Any]]:
    """Wall and CPU (user + sys) seconds of one child process reading ``path``, and its answer."""
    import subprocess

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with path.open() as source:
        done = subprocess.run(  # noqa: S603 - our own interpreter or harness binary
            command, stdin=source, cwd=cwd, capture_output=True, text=True, check=True
        )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, json.loads(done.stdout.splitlines()[-1])


def cold_process_times(
    case: dict[str, Any], runs: int, keep: Path | None, upstream: Path | None = None
) -> None:
    """Whole-process ``manage.py allocate`` on each S40k case: interpreter start, imports,
    reading and parsing the JSON line, indexing, allocating, writing the answer. With
    ``upstream`` (``scripts/upstream_allocator/``'s binary) the same case files go through
    Kubernetes' own allocator the same way, and the CPU ratio is printed."""
    import tempfile

    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as scratch:
        for label, name, count, constraint in COLD_CASES:
            line = json.dumps(
                {**case, "name": name, "claims": [claim_object("bench", count, constraint)]}
            )
            path = (keep or Path(scratch)) / f"{name}.jsonl"
            path.write_text(line + "\n")
            seconds: list[float] = []
            cpu: list[float] = []
            answer: dict[str, Any] = {}
            for _ in range(runs):
                wall, used, answer = _timed([sys.executable, "manage.py", "allocate"], path, root)
                seconds.append(wall)
                cpu.append(used)
            report(
                f"cold `manage.py allocate`, {label} ({answer.get('status')}): wall",
                f"{statistics.median(seconds):.2f} s",
                f"≤ the Go allocator on this machine (min {min(seconds):.2f} s of {runs})",
            )
            report(
                "  the same, CPU (user + sys; what a loaded machine does not inflate)",
                f"{statistics.median(cpu):.2f} s",
                f"min {min(cpu):.2f} s",
            )
            if upstream is None:
                continue
            theirs = [_timed([str(upstream)], path, root) for _ in range(runs)]
            their_cpu = statistics.median(item[1] for item in theirs)
            status = theirs[-1][2].get("status")
            report(
                f"  Kubernetes' allocator, same case ({status}), CPU",
                f"{their_cpu:.2f} s",
                f"wall {statistics.median(item[0] for item in theirs):.2f} s",
            )
            report(
                "  CPU ratio, project / upstream",
                f"{statistics.median(cpu) / their_cpu:.2f}×",
                "≤ 1.0×",
            )
    if keep:
        print(f"  case files for the Go comparison: {keep}/cold-*.jsonl")


def claim(name: str, count: int, constraint: str | None = None) -> Any:
    devices: dict[str, Any] = {
        "requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count}}
        ]
    }
    if constraint:
        devices["constraints"] = [{"matchAttribute": constraint}]
    return parse_claim(
        {"metadata": {"name": name, "namespace": "bench"}, "spec": {"devices": devices}}, "claim"
    )


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def machine() -> str:
    model = platform.processor() or "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{model}, {os.cpu_count()} cores, Python {platform.python_version()} ({platform.system()})"
    )


def report(label: str, value: str, target: str) -> None:
    print(f"{label:<62} {value:>14}   target {target}")


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cold-only", action="store_true", help="only the whole-process `manage.py allocate` runs"
    )
    parser.add_argument("--cold-runs", type=int, default=3, help="runs per cold case (median)")
    parser.add_argument(
        "--keep-cases", type=Path, metavar="DIR", help="write the cold cases' JSON Lines here"
    )
    parser.add_argument(
        "--upstream",
        type=Path,
        metavar="BINARY",
        help="also time Kubernetes' allocator on the cold cases (scripts/upstream_allocator/)",
    )
    args = parser.parse_args()
    print("machine:", machine())
    case = build_case()
    if args.keep_cases:
        args.keep_cases.mkdir(parents=True, exist_ok=True)
    cold_process_times(case, args.cold_runs, args.keep_cases, args.upstream)
    if args.cold_only:
        return
    started = time.perf_counter()
    cluster, _ = build_cluster(case)
    report(
        "build + parse 5,000 nodes / 50,000 devices", f"{time.perf_counter() - started:.2f} s", "-"
    )

    one = [claim("one", 1)]
    started = time.perf_counter()
    outcome = cluster.allocate(one)
    assert outcome.allocations is not None, outcome
    report(
        "first 1-device claim (cold indexes)",
        f"{(time.perf_counter() - started) * 1000:.1f} ms",
        "-",
    )

    samples = []
    for _ in range(200):
        started = time.perf_counter()
        outcome = cluster.allocate(one)
        samples.append(time.perf_counter() - started)
    assert outcome.node is not None and outcome.node.name == f"dgx-h100-{FULL_NODES:05d}"
    report(
        "1-device claim, node chosen, warm: p50", f"{statistics.median(samples) * 1000:.2f} ms", "-"
    )
    report(
        "1-device claim, node chosen, warm: p95",
        f"{percentile(samples, 0.95) * 1000:.2f} ms",
        "<= 25 ms",
    )

    for attribute in ("gpu.nvidia.com/clique", "resource.kubernetes.io/pcieRoot"):
        eight = [claim("eight", 8, attribute)]
        cluster.allocate(eight)
        samples = []
        for _ in range(30):
            started = time.perf_counter()
            outcome = cluster.allocate(eight)
            samples.append(time.perf_counter() - started)
        status = (
            "allocated" if outcome.allocations else ("error" if outcome.error else "unsatisfiable")
        )
        report(
            f"8-device claim, matchAttribute {attribute.split('/')[1]} ({status}): p95",
            f"{percentile(samples, 0.95) * 1000:.2f} ms",
            "<= 100 ms",
        )

    started = time.perf_counter()
    allocated = 0
    while allocated < 2_000:
        outcome = cluster.allocate([claim(f"s{allocated}", 1)])
        assert outcome.allocations is not None
        cluster.commit(outcome.allocations)
        allocated += 1
    elapsed = time.perf_counter() - started
    report(
        "sustained 1-device claims, each sees the previous (2,000)",
        f"{allocated / elapsed:.0f} /s",
        ">= 64 /s",
    )

    for label, expression in (
        (
            "new selector over 40,000 GPUs (shared shape)",
            'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H1") && '
            'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80G")) > 0',
        ),
        (
            "new selector over 40,000 GPUs (reads per-GPU uuid)",
            'device.driver == "gpu.nvidia.com" && '
            'device.attributes["gpu.nvidia.com"].uuid.endsWith("0003")',
        ),
    ):
        started = time.perf_counter()
        matched, errors = cluster.matching_devices(expression)
        report(
            f"{label} ({len(matched)} match)",
            f"{(time.perf_counter() - started) * 1000:.0f} ms",
            "<= 500 ms",
        )

    resource_slice, device = cluster.inventory.devices[0]
    view = device_input(device, resource_slice.driver, True)
    selector = compile_selector(
        'device.driver == "gpu.nvidia.com" && '
        'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3" '
        '&& device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'
    )
    assert selector.matches(view)
    rounds = 20_000
    started = time.perf_counter()
    for _ in range(rounds):
        selector._evaluate(view)
    report(
        "CEL 3-clause selector, uncached evaluation",
        f"{(time.perf_counter() - started) / rounds * 1e6:.2f} us",
        "<= 15 us",
    )
    started = time.perf_counter()
    for _ in range(rounds * 5):
        selector.matches(view)
    report(
        "CEL 3-clause selector, cached evaluation",
        f"{(time.perf_counter() - started) / (rounds * 5) * 1e6:.2f} us",
        "<= 1 us",
    )


if __name__ == "__main__":
    main()
