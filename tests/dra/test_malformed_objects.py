"""Malformed slices and allocated claims are an error naming the object and the field, whatever
shortcut the parser takes for the usual shapes (plain attributes, plain capacities, plain
devices and results)."""

import pytest

from .cases import allocated_claim, claim, request, resource_slice, result, run

SLICE = "resourceSlices[0] (slice-1): spec.devices[0]"
QUANTITY = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


def _device(**fields):
    return {"name": "gpu-0", **fields}


@pytest.mark.parametrize(
    ("device", "error"),
    [
        (
            _device(attributes={"a": {"int": True}}),
            f"{SLICE}.attributes[a].int: must be an integer",
        ),
        (
            _device(attributes={"a": {"string": 5}}),
            f"{SLICE}.attributes[a].string: must be a string",
        ),
        (
            _device(attributes={"a": {"version": 1}}),
            f"{SLICE}.attributes[a].version: must be a string",
        ),
        (_device(attributes=[1]), f"{SLICE}.attributes: must be an object"),
        (
            _device(capacity={"memory": {"value": "lots"}}),
            f"{SLICE}.capacity[memory].value: {QUANTITY}",
        ),
        (
            _device(capacity={"memory": {"value": True}}),
            f"{SLICE}.capacity[memory].value: must be a quantity string",
        ),
        (_device(capacity={"memory": "80Gi"}), f"{SLICE}.capacity[memory]: must be an object"),
        (
            _device(capacity={"memory": {"value": "80Gi", "requestPolicy": {"default": "x"}}}),
            f"{SLICE}.capacity[memory].requestPolicy.default: {QUANTITY}",
        ),
        ({"attributes": {}}, f"{SLICE}.name: required"),
        (_device(name=""), f"{SLICE}.name: required"),
        (_device(name=3), f"{SLICE}.name: must be a string"),
        (_device(taints={}), f"{SLICE}.taints: must be a list"),
        (_device(allNodes="yes"), f"{SLICE}.allNodes: must be true or false"),
        (_device(bindsToNode=1), f"{SLICE}.bindsToNode: must be true or false"),
        (_device(bindingConditions=[1]), f"{SLICE}.bindingConditions[0]: must be a string"),
    ],
)
def test_a_malformed_device_is_an_error_naming_the_field(device, error):
    output = run(slices=[resource_slice(devices=[device])])
    assert output == {"name": "case", "status": "error", "error": error}


def test_an_attribute_with_two_kinds_reads_the_first_in_kind_order():
    device = _device(attributes={"model": {"string": "a", "int": 1}})
    selector = 'device.attributes["gpu.example.com"].model == 1'
    claims = [claim(requests=[request(selectors=[selector])])]
    output = run(slices=[resource_slice(devices=[device])], claims=claims)
    assert output["status"] == "allocated"


def test_devices_sharing_a_capacity_keep_it_apart_from_a_policy():
    plain = _device(capacity={"memory": {"value": "80Gi"}})
    with_policy = {
        "name": "gpu-1",
        "capacity": {"memory": {"value": "80Gi", "requestPolicy": {"default": "x"}}},
    }
    output = run(slices=[resource_slice(devices=[plain, with_policy])])
    assert output["error"] == (
        "resourceSlices[0] (slice-1): spec.devices[1].capacity[memory].requestPolicy.default: "
        f"{QUANTITY}"
    )


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"pool": 1}, "pool: must be a string"),
        ({"device": ""}, "device: required"),
        ({"adminAccess": "yes"}, "adminAccess: must be true or false"),
    ],
)
def test_a_malformed_allocated_result_is_an_error_naming_the_field(fields, error):
    output = run(allocated=[allocated_claim(result("gpu-0", **fields))])
    assert output["error"] == f"allocatedClaims[0]: status.allocation.devices.results[0].{error}"


def test_a_plain_allocated_result_takes_its_device():
    assert run(allocated=[allocated_claim(result("gpu-0"))])["status"] == "unsatisfiable"
