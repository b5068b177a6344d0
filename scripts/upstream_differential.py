"""Differential check of ``manage.py allocate`` against Kubernetes' own allocator.

    python scripts/upstream_differential.py --upstream 1.34=/tmp/up/upstream-1.34 \\
        --upstream 1.36=/tmp/up/upstream-1.36 --cases 1000 --seed 20261203

``scripts/upstream_allocator/build.sh`` builds each upstream binary from a Kubernetes source tree.
For every version the script generates seeded random cases around the allocator's corners
(prioritized lists, constraints, partitionable counters, taints, admin access, consumable
capacity, binding conditions, node selection, CEL selectors that fail), answers each with the
project and with upstream, and reports:

- **status differences**: allocated / unsatisfiable / error disagree, and upstream does not give
  the project's answer in 12 more runs either (1.34, and 1.36's stable implementation, visit
  pools in Go map order, so their answer can change between runs);
- **identical allocations**: both allocate the same devices to the same requests, in order;
- **pin-invalid allocations**: where both allocate but differently, the project's devices are
  pinned (every other free device is removed from the slices, the node is fixed) and upstream
  must still allocate: an allocation upstream cannot make from the project's devices is not one
  it would accept.

``--cases-file FILE`` answers the lines of a JSON Lines file instead of generating;
``--write-differences FILE`` keeps every differing case; ``--record FILE.jsonl.gz`` keeps the
cases with upstream's steady answers, which the suite replays without Go
(``tests/dra/upstream_answers.jsonl.gz``).
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from dra.features import FEATURE_NAMES

ROOT = Path(__file__).resolve().parents[1]
DRIVER = "gpu.example.com"
SELECTORS = (
    f'device.driver == "{DRIVER}"',
    f'device.attributes["{DRIVER}"].model == "h100"',
    f'device.attributes["{DRIVER}"].model != "h100"',
    f'device.attributes["{DRIVER}"].index < 2',
    f'device.attributes["{DRIVER}"].index % 2 == 0',
    f'device.capacity["{DRIVER}"].memory.compareTo(quantity("50Gi")) >= 0',
    f'device.capacity["{DRIVER}"].memory.isLessThan(quantity("50Gi"))',
    f'"mig" in device.attributes["{DRIVER}"] && device.attributes["{DRIVER}"].mig',
    f'device.attributes["{DRIVER}"].driverVersion.isGreaterThan(semver("1.5.0"))',
    f'device.attributes["{DRIVER}"].root.startsWith("pcie")',
    f'device.allowMultipleAllocations == true || device.attributes["{DRIVER}"].index >= 0',
)
# Fail at run time on a device without the attribute: an error, not a mismatch.
FAILING = (f'device.attributes["{DRIVER}"].mig', 'device.attributes["other.example.com"].size > 1')


def _selector(rng: random.Random) -> str:
    return rng.choice(FAILING) if rng.random() < 0.04 else rng.choice(SELECTORS)


def _device(rng: random.Random, name: str, features: set[str], counters: list[str]) -> dict:
    attributes: dict[str, Any] = {
        "model": {"string": rng.choice(("a100", "h100"))},
        "index": {"int": rng.randint(0, 3)},
        "root": {"string": rng.choice(("pcie0", "pcie1", "nvl0"))},
        "driverVersion": {"version": rng.choice(("1.2.3", "2.0.0", "1.5.0"))},
    }
    if rng.random() < 0.5:
        attributes["mig"] = {"bool": rng.random() < 0.5}
    device: dict[str, Any] = {
        "name": name,
        "attributes": attributes,
        "capacity": {"memory": {"value": rng.choice(("40Gi", "80Gi"))}},
    }
    if counters and rng.random() < 0.7:
        device["consumesCounters"] = [
            {
                "counterSet": "gpu-0",
                "counters": {
                    counter: {"value": rng.choice(("1", "2", "4"))} for counter in counters
                },
            }
        ]
    if rng.random() < 0.15:
        device["taints"] = [
            {
                "key": "maintenance",
                "value": "yes",
                "effect": rng.choice(("NoSchedule", "NoExecute")),
            }
        ]
    if rng.random() < 0.2:
        device["allowMultipleAllocations"] = True
        policy: dict[str, Any] = {"default": "10Gi"}
        if rng.random() < 0.5:
            policy["validRange"] = {"min": "5Gi", "step": "5Gi"}
        device["capacity"]["memory"]["requestPolicy"] = policy
    if rng.random() < 0.1:
        device["bindingConditions"] = ["ready"]
        device["bindingFailureConditions"] = ["failed"]
        if rng.random() < 0.5:
            device["bindsToNode"] = True
    return device


def _slices(rng: random.Random, nodes: list[str], features: set[str]) -> list[dict]:
    slices = []
    for node_index, node in enumerate(nodes):
        pools = rng.randint(1, 2)
        for pool_index in range(pools):
            count = rng.randint(1, 2)
            pool = f"{node}-pool{pool_index}"
            counters = ["cores", "slots"][: rng.randint(0, 2)] if rng.random() < 0.4 else []
            # Counters in a slice of their own (as 1.35+ wants them) add one to the pool's
            # count, except now and then, when the pool then looks incomplete.
            split = bool(counters) and count > 1
            total = count + 1 if split and rng.random() < 0.8 else count
            for slice_index in range(count):
                if rng.random() < 0.05:
                    continue  # an incomplete pool
                devices = [
                    _device(rng, f"gpu-{slice_index}-{index}", features, counters)
                    for index in range(rng.randint(1, 4))
                ]
                spec: dict[str, Any] = {
                    "driver": DRIVER,
                    "pool": {"name": pool, "generation": 1, "resourceSliceCount": total},
                    "devices": devices,
                }
                where = rng.random()
                if where < 0.8 or node_index:
                    spec["nodeName"] = node
                elif where < 0.9:
                    spec["allNodes"] = True
                else:
                    spec["nodeSelector"] = {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "zone", "operator": "In", "values": ["a"]}
                                ]
                            }
                        ]
                    }
                if counters and slice_index == 0:
                    spec["sharedCounters"] = [
                        {
                            "name": "gpu-0",
                            "counters": {
                                counter: {"value": rng.choice(("2", "4", "6"))}
                                for counter in counters
                            },
                        }
                    ]
                    if split:
                        spec["devices"] = []  # counters in their own slice, as 1.35+ requires
                        devices_slice = copy.deepcopy(spec)
                        del devices_slice["sharedCounters"]
                        devices_slice["devices"] = devices
                        slices.append({"metadata": {"name": f"{pool}-c"}, "spec": spec})
                        spec = devices_slice
                slices.append({"metadata": {"name": f"{pool}-{slice_index}"}, "spec": spec})
    return slices


def _exactly(rng: random.Random, classes: list[str], features: set[str]) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": rng.choice(classes)}
    if rng.random() < 0.15:
        body["allocationMode"] = "All"
    else:
        body["allocationMode"] = "ExactCount"
        body["count"] = rng.choice((1, 1, 1, 2, 3))
    if rng.random() < 0.5:
        body["selectors"] = [
            {"cel": {"expression": _selector(rng)}} for _ in range(rng.randint(1, 2))
        ]
    if rng.random() < 0.1:
        body["adminAccess"] = True
    if rng.random() < 0.2:
        body["tolerations"] = [{"key": "maintenance", "operator": "Exists"}]
    if rng.random() < 0.15:
        body["capacity"] = {"requests": {"memory": rng.choice(("5Gi", "10Gi", "12Gi", "50Gi"))}}
    return body


def _claim(rng: random.Random, index: int, classes: list[str], features: set[str]) -> dict:
    requests = []
    for number in range(rng.randint(1, 3)):
        name = f"r{number}"
        if rng.random() < 0.25:
            subrequests = []
            for sub in range(rng.randint(1, 3)):
                body = _exactly(rng, classes, features)
                body.pop("adminAccess", None)
                subrequests.append({"name": f"s{sub}", **body})
            requests.append({"name": name, "firstAvailable": subrequests})
        else:
            requests.append({"name": name, "exactly": _exactly(rng, classes, features)})
    devices: dict[str, Any] = {"requests": requests}
    if len(requests) > 1 or rng.random() < 0.3:
        constraints = []
        for _ in range(rng.randint(1, 2)):
            names = [item["name"] for item in requests]
            constraint: dict[str, Any] = {}
            if rng.random() < 0.6:
                constraint["requests"] = rng.sample(names, rng.randint(1, len(names)))
            if rng.random() < 0.6:
                constraint["matchAttribute"] = f"{DRIVER}/{rng.choice(('root', 'model', 'mig'))}"
            else:
                constraint["distinctAttribute"] = f"{DRIVER}/{rng.choice(('index', 'root'))}"
            constraints.append(constraint)
        devices["constraints"] = constraints
    return {
        "metadata": {"name": f"claim-{index}", "namespace": "default", "uid": f"uid-{index}"},
        "spec": {"devices": devices},
    }


def _allocated(rng: random.Random, slices: list[dict]) -> list[dict]:
    results = []
    for item in slices:
        spec = item["spec"]
        for device in spec["devices"]:
            if rng.random() < 0.2:
                result: dict[str, Any] = {
                    "request": "r",
                    "driver": DRIVER,
                    "pool": spec["pool"]["name"],
                    "device": device["name"],
                }
                if device.get("allowMultipleAllocations") and rng.random() < 0.7:
                    result["shareID"] = f"00000000-0000-0000-0000-{len(results):012d}"
                    result["consumedCapacity"] = {"memory": rng.choice(("10Gi", "40Gi"))}
                results.append(result)
    if not results:
        return []
    return [
        {
            "metadata": {"name": "taken", "namespace": "default", "uid": "taken"},
            "status": {"allocation": {"devices": {"results": results}}},
        }
    ]


def random_case(rng: random.Random, version: str, number: int) -> dict[str, Any]:
    features = {name for name in FEATURE_NAMES if rng.random() < 0.8}
    nodes = [f"node-{index}" for index in range(rng.randint(1, 3))]
    slices = _slices(rng, nodes, features)
    classes = [
        {
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": SELECTORS[0]}}]},
        },
        {
            "metadata": {"name": "big"},
            "spec": {"selectors": [{"cel": {"expression": _selector(rng)}}]},
        },
    ]
    names = ["gpu", "gpu", "big"] + (["missing"] if rng.random() < 0.05 else [])
    claims = [_claim(rng, index, names, features) for index in range(rng.randint(1, 2))]
    return {
        "name": f"random-{version}-{number}",
        "kubernetesVersion": version,
        "features": {name: True for name in sorted(features)},
        "nodes": [
            {"metadata": {"name": name, "labels": {"zone": rng.choice(("a", "b"))}}}
            for name in nodes
        ],
        "deviceClasses": classes,
        "resourceSlices": slices,
        "allocatedClaims": _allocated(rng, slices),
        "claims": claims,
        "node": None,
    }


def pinned(case: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """The case with only the project's chosen devices left free, on the project's node."""
    keep = set()
    for allocation in answer["allocations"]:
        for result in allocation["devices"]["results"]:
            keep.add((result["pool"], result["device"]))
    for claim in case.get("allocatedClaims") or []:
        for result in claim["status"]["allocation"]["devices"]["results"]:
            keep.add((result["pool"], result["device"]))
    out = copy.deepcopy(case)
    out["name"] = f"{case['name']}-pinned"
    out["node"] = answer["node"]
    for item in out["resourceSlices"]:
        spec = item["spec"]
        spec["devices"] = [
            device for device in spec["devices"] if (spec["pool"]["name"], device["name"]) in keep
        ]
    return out


def answer_all(command: list[str], cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    text = "".join(json.dumps(case) + "\n" for case in cases)
    done = subprocess.run(  # noqa: S603 - our own binaries and manage.py
        command, input=text, capture_output=True, text=True, cwd=ROOT, check=True
    )
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    if len(answers) != len(cases):
        raise SystemExit(f"{command[0]}: {len(answers)} answers for {len(cases)} cases")
    return answers


def _among_answers(
    binary: str, case: dict[str, Any], ours: dict[str, Any], tries: int = 12
) -> bool:
    """Whether upstream gives the project's status in one of ``tries`` more runs: 1.34, and
    1.36's stable implementation, visit pools in Go map order, which changes between runs."""
    again = answer_all([binary], [case] * tries)
    return any(
        item["status"] == ours["status"] or (item["status"] == "panic" and _panics(ours))
        for item in again
    )


def _devices(answer: dict[str, Any]) -> list[list[tuple[str, str, str]]]:
    """Per claim, the (request, pool, device) of each result, in order."""
    return [
        [
            (item["request"], item["pool"], item["device"])
            for item in allocation["devices"]["results"]
        ]
        for allocation in answer.get("allocations") or []
    ]


def _panics(answer: dict[str, Any]) -> bool:
    """The project's answer where it knows 1.34 panics (an error saying so)."""
    return answer["status"] == "error" and "panics: index out of range" in answer.get("error", "")


def _steady_answers(binary: str, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each case with upstream's status (and devices, when allocated), where three runs agree
    and none panics: what the suite replays (``tests/dra/test_upstream_recorded.py``)."""
    runs = [answer_all([binary], cases) for _ in range(3)]
    steady = []
    for case, *answers in zip(cases, *runs, strict=True):
        shapes = {json.dumps([item["status"], _devices(item)]) for item in answers}
        if len(shapes) == 1 and answers[0]["status"] != "panic":
            steady.append(
                {
                    "case": case,
                    "status": answers[0]["status"],
                    "devices": _devices(answers[0]),
                }
            )
    return steady


def compare(version: str, binary: str, cases: list[dict[str, Any]], keep: list[dict]) -> Counter:
    project = answer_all([sys.executable, "manage.py", "allocate"], cases)
    upstream = answer_all([binary], cases)
    counts: Counter = Counter()
    both = []
    for case, ours, theirs in zip(cases, project, upstream, strict=True):
        counts[f"status {theirs['status']}"] += 1
        if theirs["status"] == "panic" and _panics(ours):
            counts["upstream panics, the project answers that error"] += 1
            continue
        if theirs["status"] == "panic" and not _among_answers(binary, case, ours):
            counts["upstream panics where the project answers (not compared)"] += 1
            keep.append({"case": case, "project": ours, "upstream": theirs})
            continue
        if theirs["status"] == "panic":
            counts["one of upstream's answers (random pool order)"] += 1
            continue
        if ours["status"] != theirs["status"] and not _among_answers(binary, case, ours):
            counts["status differences"] += 1
            keep.append({"case": case, "project": ours, "upstream": theirs})
        elif ours["status"] != theirs["status"]:
            counts["one of upstream's answers (random pool order)"] += 1
        elif ours["status"] == "allocated" and _devices(ours) == _devices(theirs):
            counts["allocations identical to upstream's"] += 1
        elif ours["status"] == "allocated":
            both.append((case, ours))
    pins = [pinned(case, ours) for case, ours in both]
    for pin, again, (case, ours) in zip(pins, answer_all([binary], pins), both, strict=True):
        counts["allocations pinned"] += 1
        if again["status"] == "panic":
            counts["pinned upstream panics (not compared)"] += 1
        elif again["status"] != "allocated":
            counts["pin-invalid allocations"] += 1
            keep.append({"case": case, "project": ours, "pinned": pin, "upstream": again})
    counts.setdefault("status differences", 0)
    counts.setdefault("pin-invalid allocations", 0)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", action="append", required=True, metavar="VERSION=BINARY")
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--cases-file", type=Path)
    parser.add_argument("--write-differences", type=Path)
    parser.add_argument(
        "--record",
        type=Path,
        metavar="FILE.jsonl.gz",
        help="keep each case with upstream's answer, where three runs agree (for the suite)",
    )
    options = parser.parse_args()
    recorded: list[dict] = []
    differences: list[dict] = []
    for spec in options.upstream:
        version, binary = spec.split("=", 1)
        if options.cases_file:
            lines = options.cases_file.read_text().splitlines()
            cases = [json.loads(line) for line in lines if line.strip()]
            cases = [case for case in cases if case.get("kubernetesVersion", version) == version]
        else:
            rng = random.Random(f"{options.seed}-{version}")  # noqa: S311 - seeded cases
            cases = [random_case(rng, version, number) for number in range(options.cases)]
        counts = compare(version, binary, cases, differences)
        if options.record:
            recorded.extend(_steady_answers(binary, cases))
        print(f"Kubernetes {version}: {len(cases)} cases, seed {options.seed}")
        for key in sorted(counts):
            print(f"  {key}: {counts[key]}")
    if options.record:
        with gzip.open(options.record, "wt") as out:
            out.writelines(json.dumps(item, separators=(",", ":")) + "\n" for item in recorded)
        print(f"recorded {len(recorded)} cases with upstream's answers in {options.record}")
    if options.write_differences:
        options.write_differences.write_text(
            "".join(json.dumps(item) + "\n" for item in differences)
        )


if __name__ == "__main__":
    main()
