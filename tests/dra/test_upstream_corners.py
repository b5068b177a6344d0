"""Corners found by the differential harness against upstream 1.34.9 and 1.36.3
(``scripts/upstream_differential.py``); each expected answer is the one upstream gave."""

import pytest

from .cases import (
    ALL_FEATURES,
    allocated_claim,
    claim,
    device,
    device_class,
    devices_of,
    first_available,
    node,
    request,
    resource_slice,
    result,
    run,
    subrequest,
)

PARTITIONABLE = {"partitionableDevices": True, "deviceTaints": True}


def _counted(name, model, cores="1", **extra):
    item = device(name, model=model)
    item["consumesCounters"] = [{"counterSet": "set", "counters": {"cores": {"value": cores}}}]
    item.update(extra)
    return item


def _pool(devices, cores="2", version="1.36"):
    """One pool with a counter set of ``cores``: in its own slice from 1.35 on, beside the
    devices in 1.34 (where counters live in the slice whose devices use them)."""
    counters = [{"name": "set", "counters": {"cores": {"value": cores}}}]
    if version == "1.34":
        return [resource_slice(devices=devices, sharedCounters=counters)]
    return [
        resource_slice("counters", devices=[], count=2, sharedCounters=counters),
        resource_slice("devices", devices=devices, count=2),
    ]


@pytest.mark.parametrize(("version", "status"), [("1.34", "unsatisfiable"), ("1.36", "allocated")])
def test_a_device_refused_by_a_constraint_gives_its_counters_back_from_1_36(version, status):
    # b is refused by matchAttribute after its counter was reserved. Before 1.36 the counter
    # stays reserved, so the second "a" finds the set used up; 1.36's rollback returns it.
    devices = [_counted("a0", "a"), _counted("b0", "b"), _counted("a1", "a")]
    claims = [claim(requests=[request(count=2)], constraints=[{"matchAttribute": "model"}])]
    output = run(claims=claims, slices=_pool(devices, version=version), version=version)
    assert output["status"] == status
    if status == "allocated":
        assert devices_of(output) == ["a0", "a1"]


@pytest.mark.parametrize(("version", "status"), [("1.34", "unsatisfiable"), ("1.36", "allocated")])
def test_a_device_refused_for_a_taint_gives_its_counters_back_from_1_36(version, status):
    tainted = _counted("t0", "a", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    devices = [_counted("a0", "a"), tainted, _counted("a1", "a")]
    output = run(
        claims=[claim(requests=[request(count=2)])],
        slices=_pool(devices, version=version),
        features=PARTITIONABLE,
        version=version,
    )
    assert output["status"] == status


def test_1_36_gathers_a_slice_with_shared_counters_for_every_node():
    # The counter slice names node-2, yet upstream gathers it for node-1 too (it indexes
    # slices with counters as shared): node-2's incomplete pool (2 of 3 slices) is then
    # seen from node-1, where an "All" request refuses it.
    counters = [{"name": "set", "counters": {"cores": {"value": "4"}}}]
    slices = [
        resource_slice("local", devices=[device("gpu-0")], pool="local"),
        resource_slice(
            "far-counters",
            devices=[],
            pool="far",
            node_name="node-2",
            count=3,
            sharedCounters=counters,
        ),
        resource_slice(
            "far-devices", devices=[device("gpu-9")], pool="far", node_name="node-2", count=3
        ),
    ]
    claims = [claim(requests=[request(allocationMode="All")])]
    output = run(claims=claims, slices=slices, nodes=[node("node-1"), node("node-2")])
    assert output["status"] == "error"
    assert "resource pool gpu.example.com/far is currently being updated" in output["error"]
    # An exact count takes node-1's own device: the incomplete pool only stops "All".
    output = run(slices=slices, nodes=[node("node-1"), node("node-2")])
    assert devices_of(output) == ["gpu-0"]


def _held_by_a_share():
    share = result(
        "shared",
        shareID="00000000-0000-0000-0000-000000000001",
        consumedCapacity={"memory": "10Gi"},
    )
    return [allocated_claim(share)]


def _shared(cores="2"):
    return _counted(
        "shared",
        "a",
        cores=cores,
        allowMultipleAllocations=True,
        capacity={"memory": {"value": "80Gi"}},
    )


@pytest.mark.parametrize(("version", "status"), [("1.34", "allocated"), ("1.36", "unsatisfiable")])
def test_a_device_held_only_by_shares_has_taken_its_counters_from_1_36(version, status):
    # 1.36 counts a device held by shares as having taken its counters; 1.34 counts only
    # devices allocated whole, so "other" still finds the set's two cores there.
    devices = [_counted("other", "b"), _shared()]
    claims = [
        claim(requests=[request(selectors=['device.attributes["gpu.example.com"].model == "b"'])])
    ]
    output = run(
        claims=claims,
        slices=_pool(devices, version=version),
        allocated=_held_by_a_share(),
        features=ALL_FEATURES,
        version=version,
    )
    assert output["status"] == status


@pytest.mark.parametrize("version", ["1.34", "1.36"])
def test_one_more_share_of_a_shared_device_fits_once_its_counters_are_spent(version):
    # The set has room for the device's counters once. 1.36 counts them as taken by the
    # share and then skips the counter check for a device whose capacity is in use; 1.34
    # counts only whole devices, so it checks and finds room. Either way one more share fits.
    claims = [claim(requests=[request(capacity={"requests": {"memory": "10Gi"}})])]
    output = run(
        claims=claims,
        slices=_pool([_shared()], version=version),
        allocated=_held_by_a_share(),
        features=ALL_FEATURES,
        version=version,
    )
    assert output["status"] == "allocated"


def _fallback_to_all(first):
    requests = [
        first_available("r", subrequest("s0", **first), subrequest("s1", allocationMode="All"))
    ]
    return requests


THREE = [device("gpu-0", model="a"), device("gpu-1", model="b"), device("gpu-2", model="a")]
NONE_MATCH = {"count": 1, "selectors": ['device.attributes["gpu.example.com"].model == "c"']}
TWO_B = {"count": 2, "selectors": ['device.attributes["gpu.example.com"].model == "b"']}


@pytest.mark.parametrize(
    ("version", "first", "expected"),
    [
        # 1.34 forgets which alternative it fills after the first device of an "All" one
        # that is not the first: the rest of the request is filled as the first alternative,
        # from that device index on (issue 26, item 1).
        ("1.34", NONE_MATCH, [("r/s1", "gpu-0")]),
        ("1.34", TWO_B, [("r/s1", "gpu-0"), ("r/s0", "gpu-1")]),
        ("1.36", NONE_MATCH, [("r/s1", "gpu-0"), ("r/s1", "gpu-1"), ("r/s1", "gpu-2")]),
        ("1.36", TWO_B, [("r/s1", "gpu-0"), ("r/s1", "gpu-1"), ("r/s1", "gpu-2")]),
    ],
)
def test_an_all_alternative_after_the_first_is_filled_per_version(version, first, expected):
    output = run(
        claims=[claim(requests=_fallback_to_all(first))],
        slices=[resource_slice(devices=THREE)],
        features={"prioritizedList": True},
        version=version,
    )
    assert output["status"] == "allocated"
    results = output["allocations"][0]["devices"]["results"]
    assert [(item["request"], item["device"]) for item in results] == expected


@pytest.mark.parametrize(("version", "status"), [("1.34", "allocated"), ("1.36", "error")])
def test_1_34_never_reaches_the_constraint_of_an_all_alternative_after_the_first(version, status):
    output = run(
        claims=[
            claim(
                requests=_fallback_to_all(NONE_MATCH),
                constraints=[{"matchAttribute": "gpu.example.com/model"}],
            )
        ],
        slices=[resource_slice(devices=THREE)],
        features={"prioritizedList": True},
        version=version,
    )
    assert output["status"] == status


@pytest.mark.parametrize(
    ("features", "refused"),
    [
        # Binding without device status picks the stable implementation, which does not sort
        # (Go map order: upstream names z 15 times in 16 and y once); name order is the
        # reproducible one of its answers.
        ({"deviceBinding": True}, "gpu.example.com/p1/z"),
        # With both, pools holding devices with binding conditions come last.
        ({"deviceBinding": True, "deviceStatus": True}, "gpu.example.com/p0/y"),
    ],
)
def test_pools_with_binding_conditions_come_last_only_where_upstream_sorts_them(features, refused):
    bound = device("x", model="a")
    bound["bindingConditions"] = ["ready"]
    slices = [
        resource_slice("s0", devices=[bound, device("y", model="b")], pool="p0"),
        resource_slice("s1", devices=[device("z", model="a")], pool="p1"),
    ]
    claims = [
        claim(
            requests=[
                request(
                    allocationMode="All",
                    selectors=['!("x" in device.attributes["gpu.example.com"])'],
                )
            ],
            constraints=[{"matchAttribute": "gpu.example.com/model"}],
        )
    ]
    output = run(claims=claims, slices=slices, features=features)
    assert output["status"] == "error"
    assert f"cannot add device {refused} because a claim constraint" in output["error"]


@pytest.mark.parametrize(("version", "status"), [("1.34", "allocated"), ("1.36", "unsatisfiable")])
def test_a_node_whose_one_shared_device_serves_a_whole_request_is_not_skipped(version, status):
    # Before 1.36 one shared device can serve several devices of a request (dra-semantics
    # §15.6), so the cluster-wide pre-filter must not skip node-1 for having one device only.
    shared = device("shared", model="a")
    shared["allowMultipleAllocations"] = True
    shared["capacity"] = {"memory": {"value": "40Gi", "requestPolicy": {"default": "10Gi"}}}
    others = [device(f"other-{index}", model="b") for index in range(2)]
    for item in others:
        item["capacity"] = {"memory": {"value": "40Gi"}}
    slices = [resource_slice(devices=[shared, *others], node_name="node-1")]
    selector = 'device.attributes["gpu.example.com"].model == "a"'
    output = run(
        claims=[claim(requests=[request(count=3, selectors=[selector])])],
        slices=slices,
        nodes=[node("node-0"), node("node-1")],
        node_name=None,
        features=ALL_FEATURES,
        version=version,
    )
    assert output["status"] == status
    if status == "allocated":
        assert devices_of(output) == ["shared"] * 3


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # cel-go spells a receiver call's failed overload with the target before the dot
        (
            '"abc".reverse() == "cba"',
            "<input>:1:14: found no matching overload for 'reverse' applied to 'string.()'",
        ),
        (
            'regex.replace("abc", "b", "x") == "axc"',
            "no matching overload for 'replace' applied to '!error!.(string, string, string)'",
        ),
        # a global call keeps the plain list
        ('isIP(cidr("10.0.0.0/8"))', "no matching overload for 'isIP' applied to '(net.CIDR)'"),
    ],
)
def test_compile_errors_spell_overloads_as_cel_go_does(expression, message):
    output = run(classes=[device_class("gpu", expression)])
    assert output["status"] == "error"
    assert message in output["error"]


def test_a_division_by_zero_is_named_as_cel_go_names_it():
    output = run(classes=[device_class("gpu", "1 / 0 == 0")])
    assert output["error"].endswith("CEL runtime error: division by zero")


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("[1, 2][5] == 1", "CEL runtime error: index out of bounds: 5"),
        ('device.attributes["gpu.example.com"].model > 1', "CEL runtime error: no such overload"),
        (
            "device.nosuch == 1",
            "ERROR: <input>:1:7: undefined field 'nosuch'\n | device.nosuch == 1\n | ......^",
        ),
        (
            "dra_keys([1]).size() == 1",
            "ERROR: <input>:1:9: undeclared reference to 'dra_keys' (in container '')\n"
            " | dra_keys([1]).size() == 1\n | ........^",
        ),
    ],
)
def test_errors_read_as_upstream_words_them(expression, message):
    slices = [resource_slice(devices=[device("gpu-0", model="h100")])]
    output = run(classes=[device_class("gpu", expression)], slices=slices)
    assert output["status"] == "error"
    assert output["error"].endswith(message)
