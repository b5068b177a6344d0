"""A group's selector runs on a view holding only the values its grouping key read: the answer
(or the error) must be the one the device's whole view gives, for every spelling of a name."""

from __future__ import annotations

import random

import pytest

from dra.allocator.grouping import grouped_input, grouping_key_reader
from dra.cel import CelRuntimeError, compile_selector, device_input
from dra.model import ResourceSlice, parse_slice

DRIVER = "gpu.example.com"

SELECTORS = [
    f'device.attributes["{DRIVER}"].uuid.endsWith("3")',
    f'device.attributes["{DRIVER}"].model == "H100" && device.driver == "{DRIVER}"',
    f'device.attributes["{DRIVER}"].driverVersion.isGreaterThan(semver("1.2.0"))',
    f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',
    'device.attributes["other.example.com"].uuid == "x"',
    'device.attributes["other.example.com"].count > 2',
    f'device.attributes["{DRIVER}"].count * 2 == 8 || device.allowMultipleAllocations',
    f'device.capacity["{DRIVER}"].cores.isGreaterThan(quantity("4"))',
]


def _device(rng: random.Random, number: int) -> dict[str, object]:
    """A device whose names come bare, qualified, both (in either order) or not at all."""
    attributes: dict[str, object] = {}
    spellings = ["uuid", "model", "driverVersion", "count"]
    values: dict[str, object] = {
        "uuid": {"string": f"GPU-{number}"},
        "model": {"string": rng.choice(["H100", "A100"])},
        "driverVersion": {"version": rng.choice(["1.2.0", "1.3.1", "2.0.0-rc.1"])},
        "count": {"int": rng.randint(1, 5)},
    }
    for name in spellings:
        form = rng.choice(["bare", "full", "both", "both-reversed", "other", "absent"])
        if form == "bare":
            attributes[name] = values[name]
        elif form == "full":
            attributes[f"{DRIVER}/{name}"] = values[name]
        elif form == "both":
            attributes[name] = values[name]
            attributes[f"{DRIVER}/{name}"] = {"string": "qualified"}
        elif form == "both-reversed":
            attributes[f"{DRIVER}/{name}"] = {"string": "qualified"}
            attributes[name] = values[name]
        elif form == "other":
            attributes[f"other.example.com/{name}"] = values[name]
    capacity: dict[str, object] = {}
    if rng.random() < 0.8:
        capacity["memory"] = {"value": rng.choice(["80Gi", "40Gi", "24Gi"])}
    if rng.random() < 0.5:
        capacity[f"{DRIVER}/cores"] = {"value": str(rng.randint(1, 8))}
    device: dict[str, object] = {"name": f"d{number}", "attributes": attributes}
    if capacity:
        device["capacity"] = capacity
    if rng.random() < 0.3:
        device["allowMultipleAllocations"] = True
    return device


def _answer(expression: str, view: object) -> object:
    try:
        return compile_selector(expression).matches(view)  # type: ignore[arg-type]
    except CelRuntimeError as error:
        return ("error", str(error))


def _slice(devices: list[dict[str, object]]) -> ResourceSlice:
    raw = {
        "metadata": {"name": "s"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "n",
            "devices": devices,
        },
    }
    return parse_slice(raw, "s")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_grouped_view_answers_as_the_whole_view(seed: int) -> None:
    rng = random.Random(seed)
    resource_slice = _slice([_device(rng, number) for number in range(120)])
    compared = 0
    for expression in SELECTORS:
        selector = compile_selector(expression)
        assert selector.error is None and selector.reads is not None
        paths = sorted(selector.reads.paths)
        reader = grouping_key_reader(paths, True)
        assert reader is not None, expression
        for device in resource_slice.devices:
            key = reader(resource_slice, device)
            assert key is not None
            whole = device_input(device, DRIVER, True)
            grouped = grouped_input(paths, key, resource_slice, device, True, True)
            assert _answer(expression, grouped) == _answer(expression, whole), (
                expression,
                device.name,
            )
            compared += 1
    assert compared == len(SELECTORS) * 120


def test_a_version_that_is_not_semver_gets_no_key() -> None:
    resource_slice = _slice([{"name": "d", "attributes": {"v": {"version": "not-a-version"}}}])
    reader = grouping_key_reader([("attr", DRIVER, "uuid")], True)
    assert reader is not None
    # the whole view carries a conversion error, so the device forms a group of its own
    assert reader(resource_slice, resource_slice.devices[0]) is None
