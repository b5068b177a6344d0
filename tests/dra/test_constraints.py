"""matchAttribute and distinctAttribute constraints and their type rules (§7)."""

import pytest

from .cases import claim, device, devices_of, request, resource_slice, run

ROOT = "resource.kubernetes.io/pcieRoot"


def gpus(*roots):
    return [
        resource_slice(
            devices=[
                {"name": f"gpu-{index}", "attributes": {ROOT: {"string": root}}}
                for index, root in enumerate(roots)
            ]
        )
    ]


def test_match_attribute_picks_devices_sharing_the_value():
    claims = [claim(requests=[request(count=2)], constraints=[{"matchAttribute": ROOT}])]
    assert devices_of(run(claims=claims, slices=gpus("a", "b", "a"))) == ["gpu-0", "gpu-2"]


def test_match_attribute_backtracks_over_the_first_choice():
    claims = [claim(requests=[request(count=2)], constraints=[{"matchAttribute": ROOT}])]
    assert devices_of(run(claims=claims, slices=gpus("a", "b", "c", "b"))) == ["gpu-1", "gpu-3"]


def test_match_attribute_is_unsatisfiable_when_no_group_is_big_enough():
    claims = [claim(requests=[request(count=3)], constraints=[{"matchAttribute": ROOT}])]
    assert run(claims=claims, slices=gpus("a", "b", "a", "b"))["status"] == "unsatisfiable"


def test_a_device_without_the_attribute_is_rejected_even_alone():
    slices = [resource_slice(devices=[device("plain")])]
    claims = [claim(constraints=[{"matchAttribute": ROOT}])]
    assert run(claims=claims, slices=slices)["status"] == "unsatisfiable"


def test_constraints_only_cover_the_listed_requests():
    claims = [
        claim(
            requests=[request("a"), request("b")],
            constraints=[{"requests": ["a"], "matchAttribute": ROOT}],
        )
    ]
    slices = gpus("x", "y")
    assert devices_of(run(claims=claims, slices=slices)) == ["gpu-0", "gpu-1"]


@pytest.mark.parametrize(
    ("first", "second", "matches"),
    [
        ({"int": 1}, {"int": 1}, True),
        ({"int": 1}, {"bool": True}, False),
        ({"int": 1}, {"string": "1"}, False),
        ({"version": "1.2.3"}, {"version": "1.2.3"}, True),
        ({"version": "1.2.3"}, {"version": "1.2.3+b1"}, False),
        ({"bool": False}, {"bool": False}, True),
    ],
)
def test_match_attribute_compares_type_and_value(first, second, matches):
    slices = [
        resource_slice(
            devices=[
                {"name": "d0", "attributes": {"x": first}},
                {"name": "d1", "attributes": {"x": second}},
            ]
        )
    ]
    claims = [
        claim(requests=[request(count=2)], constraints=[{"matchAttribute": "gpu.example.com/x"}])
    ]
    assert (run(claims=claims, slices=slices)["status"] == "allocated") is matches


def test_unqualified_attributes_only_count_for_their_own_driver():
    slices = [
        resource_slice("gpus", devices=[{"name": "g", "attributes": {"numa": {"int": 0}}}]),
        resource_slice(
            "nics",
            driver="nic.example.com",
            pool="nics",
            devices=[{"name": "n", "attributes": {"numa": {"int": 0}}}],
        ),
    ]
    classes = [
        {
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        },
        {
            "metadata": {"name": "nic"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "nic.example.com"'}}]},
        },
    ]
    claims = [
        claim(
            requests=[request("g"), request("n", "nic")],
            constraints=[{"matchAttribute": "gpu.example.com/numa"}],
        )
    ]
    assert run(claims=claims, slices=slices, classes=classes)["status"] == "unsatisfiable"


@pytest.mark.parametrize(
    ("version", "status"),
    [("1.34", "allocated"), ("1.35", "unsatisfiable"), ("1.36", "unsatisfiable")],
)
def test_distinct_attribute_compares_values_from_1_35_on(version, status):
    claims = [
        claim(requests=[request("a"), request("b")], constraints=[{"distinctAttribute": ROOT}])
    ]
    slices = gpus("same", "same")
    assert run(claims=claims, slices=slices, version=version)["status"] == status


def test_distinct_attribute_picks_different_values():
    claims = [
        claim(requests=[request("a"), request("b")], constraints=[{"distinctAttribute": ROOT}])
    ]
    assert devices_of(run(claims=claims, slices=gpus("x", "x", "y"))) == ["gpu-0", "gpu-2"]


def test_a_constraint_rejecting_a_device_in_all_mode_is_an_error():
    claims = [
        claim(requests=[request(allocationMode="All")], constraints=[{"matchAttribute": ROOT}])
    ]
    output = run(claims=claims, slices=gpus("a", "b"))
    assert output["status"] == "error"
    assert (
        "cannot add device gpu.example.com/pool-1/gpu-1 because a claim constraint "
        "would not be satisfied" in output["error"]
    )


STABLE_1_35 = {  # what upstream's stable implementation supports from 1.35 on
    "adminAccess": True,
    "prioritizedList": True,
    "partitionableDevices": True,
    "deviceTaints": True,
}


@pytest.mark.parametrize("version", ["1.35", "1.36"])
@pytest.mark.parametrize(
    ("extra", "status"),
    [
        ({}, "error"),
        ({"deviceBinding": True}, "error"),  # binding conditions need device status too
        ({"consumableCapacity": True}, "allocated"),
        ({"deviceBinding": True, "deviceStatus": True}, "allocated"),
    ],
)
def test_distinct_attribute_is_an_empty_constraint_where_upstream_picks_its_stable_allocator(
    version, extra, status
):
    """From 1.35 upstream picks its stable implementation unless consumable capacity or
    binding conditions with device status are on, and stable has no distinctAttribute
    (issue 26, item 2)."""
    claims = [
        claim(requests=[request("a"), request("b")], constraints=[{"distinctAttribute": ROOT}])
    ]
    output = run(
        claims=claims, slices=gpus("x", "y"), features={**STABLE_1_35, **extra}, version=version
    )
    assert output["status"] == status
    if status == "error":
        assert output["error"].endswith(
            "constraint #0: empty constraint (unsupported constraint type?)"
        )


@pytest.mark.parametrize("version", ["1.35", "1.36"])
def test_distinct_attribute_remembers_the_last_device_of_each_request_only(version):
    """Upstream keeps one value per request name (issue 26, item 3): a request's third device
    is compared with its second only, so x, y, x passes; a device taken back forgets its
    request's value."""
    claims = [claim(requests=[request("a", count=3)], constraints=[{"distinctAttribute": ROOT}])]
    output = run(claims=claims, slices=gpus("x", "y", "x"), version=version)
    assert devices_of(output) == ["gpu-0", "gpu-1", "gpu-2"]
    # Across requests the last values still count: b's device must differ from a's last.
    claims = [
        claim(
            requests=[request("a", count=2), request("b")],
            constraints=[{"distinctAttribute": ROOT}],
        )
    ]
    output = run(claims=claims, slices=gpus("x", "y", "y", "x"), version=version)
    assert devices_of(output) == ["gpu-0", "gpu-1", "gpu-3"]
