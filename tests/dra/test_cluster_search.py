"""Choosing the node (node: null): name order, first success, errors, and the fast path."""

import random

import pytest

from dra.allocator import build_cluster
from dra.allocator.search import AllocationError, NodeAllocation
from dra.model import parse_device_class, parse_node

from .cases import (
    allocated_claim,
    case,
    claim,
    device,
    device_class,
    node,
    request,
    resource_slice,
    result,
    run,
)


def test_it_picks_the_first_node_by_name_that_works():
    nodes = [node("node-b"), node("node-a"), node("node-c")]
    slices = [
        resource_slice("s-c", node_name="node-c", pool="c"),
        resource_slice("s-b", node_name="node-b", pool="b"),
    ]
    output = run(nodes=nodes, slices=slices, node_name=None)
    assert output["node"] == "node-b"


def test_it_skips_nodes_whose_devices_are_taken():
    nodes = [node("node-a"), node("node-b")]
    slices = [
        resource_slice("a", node_name="node-a", pool="a"),
        resource_slice("b", node_name="node-b", pool="b"),
    ]
    output = run(
        nodes=nodes,
        slices=slices,
        node_name=None,
        allocated=[allocated_claim(result("gpu-0", pool="a"))],
    )
    assert output["node"] == "node-b"


def test_an_error_on_one_node_does_not_hide_success_on_another():
    nodes = [node("node-a"), node("node-b")]
    slices = [
        resource_slice("a", node_name="node-a", pool="a", devices=[device("x")]),
        resource_slice("b", node_name="node-b", pool="b", devices=[device("y", model="m")]),
    ]
    claims = [
        claim(requests=[request(selectors=['device.attributes["gpu.example.com"].model == "m"'])])
    ]
    output = run(nodes=nodes, slices=slices, claims=claims, node_name=None)
    assert output["node"] == "node-b"


def test_when_no_node_works_the_first_error_is_reported():
    nodes = [node("node-a"), node("node-b")]
    slices = [
        resource_slice("a", node_name="node-a", pool="a"),
        resource_slice("b", node_name="node-b", pool="b"),
    ]
    claims = [
        claim(requests=[request(selectors=['device.attributes["gpu.example.com"].model == "m"'])])
    ]
    output = run(nodes=nodes, slices=slices, claims=claims, node_name=None)
    assert output["status"] == "error"
    assert "gpu.example.com/a/gpu-0" in output["error"]


def test_an_unknown_node_is_an_error():
    assert run(node_name="nope")["status"] == "error"


def test_classes_replaced_on_a_long_lived_cluster_are_the_ones_it_allocates_with():
    slices = [resource_slice("a", node_name="node-a", pool="a", devices=[device("x", model="m")])]
    cluster, claims = build_cluster(case(nodes=[node("node-a")], slices=slices, classes=[]))
    assert "not found" in (cluster.allocate(claims).error or "")  # the case is made and kept
    cluster.replace_classes({"gpu": parse_device_class(device_class(), "gpu")})
    assert cluster.allocate(claims).node is not None
    narrowed = device_class("gpu", 'device.attributes["gpu.example.com"].model == "n"')
    cluster.replace_classes({"gpu": parse_device_class(narrowed, "gpu")})
    assert cluster.allocate(claims).allocations is None
    cluster.replace_classes({})
    assert "not found" in (cluster.allocate(claims).error or "")


def test_nodes_replaced_on_a_long_lived_cluster_are_the_ones_it_searches():
    selector = {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["yes"]}]}
    shared = resource_slice("s", pool="p", nodeSelector={"nodeSelectorTerms": [selector]})
    cluster, claims = build_cluster(case(nodes=[node("node-a")], slices=[shared], node_name=None))
    assert cluster.allocate(claims).allocations is None  # node-a sees no device (and is kept)
    cluster.replace_nodes([parse_node(node("node-a", gpu="yes"), "node-a")])
    assert cluster.allocate(claims).node.name == "node-a"


def _straightforward(body):
    """Every node in name order, first success, else first error — no indexes."""
    cluster, claims = build_cluster(body)
    case_data = cluster.case(claims)
    first_error = None
    for candidate in sorted(cluster.nodes, key=lambda item: item.name):
        try:
            allocations = NodeAllocation(case_data, candidate).allocate()
        except AllocationError as error:
            first_error = first_error or str(error)
            continue
        if allocations is not None:
            return "allocated", candidate.name
    return ("error", None) if first_error else ("unsatisfiable", None)


def _random_case(rng):
    nodes = [node(f"node-{index}", zone=rng.choice("ab")) for index in range(rng.randint(1, 6))]
    slices = []
    for index, item in enumerate(nodes):
        devices = [
            device(f"d{number}", model=rng.choice(["x", "y"]), root=rng.choice(["r1", "r2"]))
            for number in range(rng.randint(0, 4))
        ]
        if rng.random() < 0.15:
            devices.append(device("odd"))  # lacks attributes: selectors on it may fail
        slices.append(
            resource_slice(
                f"s{index}", devices=devices, node_name=item["metadata"]["name"], pool=f"p{index}"
            )
        )
    if rng.random() < 0.3:
        slices.append(
            resource_slice(
                "shared",
                node_name=None,
                pool="shared",
                devices=[device("net", model="x", root="r1")],
                nodeSelector={
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                },
            )
        )
    selectors = rng.choice(
        [
            [],
            ['device.attributes["gpu.example.com"].model == "x"'],
            [
                'device.attributes["gpu.example.com"].model == "y" || '
                'device.attributes["gpu.example.com"].root == "r1"'
            ],
        ]
    )
    requests = [
        request(f"r{index}", count=rng.randint(1, 3), selectors=selectors)
        for index in range(rng.randint(1, 2))
    ]
    constraints = [{"matchAttribute": "gpu.example.com/root"}] if rng.random() < 0.3 else None
    allocated = []
    for item in slices:
        for entry in item["spec"]["devices"]:
            if rng.random() < 0.3:
                allocated.append(result(entry["name"], pool=item["spec"]["pool"]["name"]))
    return case(
        claims=[claim(requests=requests, constraints=constraints)],
        slices=slices,
        nodes=nodes,
        node_name=None,
        allocated=[allocated_claim(*allocated)] if allocated else [],
    )


@pytest.mark.parametrize("seed", range(60))
def test_the_indexed_search_agrees_with_trying_every_node(seed):
    from dra.allocator import run_case

    body = _random_case(random.Random(seed))
    output = run_case(body)
    status, chosen = _straightforward(body)
    assert output["status"] == status
    if status == "allocated":
        assert output["node"] == chosen


def _attribute_shapes_case():
    """Devices whose selector view is easy to get wrong: an attribute both qualified and not
    (in both orders), another domain, a slash in the identifier, a version that is not semver,
    a list attribute, capacities both ways, and a second driver."""
    gpu = [
        {"name": "plain", "attributes": {"model": {"string": "a"}}},
        {
            "name": "unqualified-last",
            "attributes": {"gpu.example.com/model": {"string": "b"}, "model": {"string": "a"}},
        },
        {
            "name": "qualified-last",
            "attributes": {"model": {"string": "a"}, "gpu.example.com/model": {"string": "b"}},
        },
        {"name": "other-domain", "attributes": {"other.example.com/model": {"string": "a"}}},
        {"name": "slash", "attributes": {"a/b/c": {"string": "x"}, "model": {"int": 3}}},
        {"name": "bad-version", "attributes": {"model": {"string": "a"}, "v": {"version": "1.x"}}},
        {
            "name": "good-version",
            "attributes": {"model": {"string": "a"}, "v": {"version": "1.2.3"}},
        },
        {"name": "list", "attributes": {"model": {"string": "a"}, "l": {"ints": [1, 2]}}},
        {
            "name": "capacities",
            "attributes": {"model": {"string": "a"}},
            "capacity": {"memory": {"value": "1Gi"}, "gpu.example.com/memory": {"value": "2Gi"}},
            "allowMultipleAllocations": True,
        },
    ]
    other = [{"name": "other", "attributes": {"model": {"string": "a"}}}]
    return case(
        slices=[
            resource_slice("gpu", devices=gpu),
            resource_slice("other", devices=other, driver="other.example.com", pool="other"),
        ]
    )


@pytest.mark.parametrize(
    "expression",
    [
        'device.attributes["gpu.example.com"].model == "a"',
        'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "b"',
        'device.attributes["other.example.com"].model == "a"',
        'device.attributes["a"]["b/c"] == "x"',
        'device.capacity["gpu.example.com"].memory.compareTo(quantity("1Gi")) > 0',
        "device.allowMultipleAllocations",
        '"model" in device.attributes["gpu.example.com"]',  # reads the whole domain
        "device.driver != 'other.example.com'",
    ],
)
def test_the_index_matches_and_fails_exactly_as_evaluating_each_device(expression):
    from dra.cel import CelRuntimeError, compile_selector, device_input

    cluster, _ = build_cluster(_attribute_shapes_case())
    expose = cluster.features.newest_variant
    selector = compile_selector(expression)
    expected_matches, expected_errors = [], []
    for resource_slice_, device_ in cluster.inventory.devices:
        label = f"{resource_slice_.driver}/{resource_slice_.pool_name}/{device_.name}"
        try:
            if selector.matches(device_input(device_, resource_slice_.driver, expose)):
                expected_matches.append(label)
        except CelRuntimeError:
            expected_errors.append(label)
    assert cluster.matching_devices(expression) == (
        sorted(expected_matches, key=_uid_order(cluster)),
        sorted(expected_errors, key=_uid_order(cluster)),
    )
    assert expected_errors  # the bad version and the list attribute fail every selector


def _uid_order(cluster):
    order = {
        f"{resource_slice_.driver}/{resource_slice_.pool_name}/{device_.name}": device_.uid
        for resource_slice_, device_ in cluster.inventory.devices
    }
    return order.__getitem__
