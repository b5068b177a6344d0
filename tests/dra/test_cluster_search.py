"""Choosing the node (node: null): name order, first success, errors, and the fast path."""

import random

import pytest

from dra.allocator import build_cluster
from dra.allocator.search import AllocationError, NodeAllocation

from .cases import allocated_claim, case, claim, device, node, request, resource_slice, result, run


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
