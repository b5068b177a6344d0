"""Randomized small cases against a brute-force reference: same status, valid allocations."""

import itertools
import random

import pytest

from dra.allocator import run_case

from .cases import allocated_claim, case, claim, request, resource_slice, result

COLORS = ("red", "blue")


def _random(rng):
    devices = [
        {
            "name": f"d{index}",
            "attributes": {
                "color": {"string": rng.choice(COLORS)},
                "root": {"int": rng.randint(0, 2)},
            },
        }
        for index in range(rng.randint(1, 6))
    ]
    slices = [resource_slice(devices=devices)]
    requests = []
    for index in range(rng.randint(1, 3)):
        selectors = []
        if rng.random() < 0.5:
            selectors = [f'device.attributes["gpu.example.com"].color == "{rng.choice(COLORS)}"']
        requests.append(request(f"r{index}", count=rng.randint(1, 2), selectors=selectors))
    constraints = [{"matchAttribute": "gpu.example.com/root"}] if rng.random() < 0.5 else []
    taken = [device["name"] for device in devices if rng.random() < 0.25]
    allocated = [allocated_claim(*(result(name) for name in taken))] if taken else []
    return (
        case(
            claims=[claim(requests=requests, constraints=constraints)],
            slices=slices,
            allocated=allocated,
        ),
        devices,
        requests,
        constraints,
        set(taken),
    )


def _fits(device, selectors):
    for selector in selectors:
        wanted = selector["cel"]["expression"].split('"')[-2]
        if device["attributes"]["color"]["string"] != wanted:
            return False
    return True


def _reference(devices, requests, constraints, taken):
    free = [device for device in devices if device["name"] not in taken]
    slots = []
    for item in requests:
        slots += [item["exactly"].get("selectors", [])] * item["exactly"]["count"]
    for chosen in itertools.permutations(free, len(slots)):
        if not all(
            _fits(device, selectors) for device, selectors in zip(chosen, slots, strict=True)
        ):
            continue
        if constraints and len({device["attributes"]["root"]["int"] for device in chosen}) > 1:
            continue
        return "allocated"
    return "unsatisfiable"


@pytest.mark.parametrize("seed", range(150))
@pytest.mark.parametrize("version", ["1.34", "1.36"])
def test_the_allocator_agrees_with_brute_force(seed, version):
    body, devices, requests, constraints, taken = _random(random.Random(seed))
    body["kubernetesVersion"] = version
    output = run_case(body)
    assert output["status"] == _reference(devices, requests, constraints, taken)
    if output["status"] != "allocated":
        return
    by_name = {device["name"]: device for device in devices}
    picked = output["allocations"][0]["devices"]["results"]
    names = [entry["device"] for entry in picked]
    assert len(names) == len(set(names)) and not set(names) & taken
    for entry in picked:
        selectors = next(item for item in requests if item["name"] == entry["request"])[
            "exactly"
        ].get("selectors", [])
        assert _fits(by_name[entry["device"]], selectors)
    if constraints:
        assert len({by_name[name]["attributes"]["root"]["int"] for name in names}) == 1
