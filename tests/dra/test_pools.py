"""Gathering pools for a node: selection, generations, incomplete and invalid pools (§4)."""

import pytest

from .cases import claim, device, devices_of, node, request, resource_slice, run


def test_the_highest_generation_replaces_older_slices_whatever_the_input_order():
    old = resource_slice("old", devices=[device("old-gpu")], generation=1)
    new = resource_slice("new", devices=[device("new-gpu")], generation=2)
    assert devices_of(run(slices=[old, new])) == ["new-gpu"]
    assert devices_of(run(slices=[new, old])) == ["new-gpu"]


def test_pools_are_tried_in_driver_then_pool_name_order_and_slices_in_name_order():
    slices = [
        resource_slice("b", devices=[device("in-b")], pool="pool-b"),
        resource_slice("z", devices=[device("in-a-z")], pool="pool-a", count=2),
        resource_slice("y", devices=[device("in-a-y")], pool="pool-a", count=2),
    ]
    output = run(claims=[claim(requests=[request(count=3)])], slices=slices)
    assert devices_of(output) == ["in-a-y", "in-a-z", "in-b"]


@pytest.mark.parametrize(
    ("version", "status"),
    [("1.34", "allocated"), ("1.35", "unsatisfiable"), ("1.36", "unsatisfiable")],
)
def test_incomplete_pools_are_used_by_1_34_and_skipped_later(version, status):
    slices = [resource_slice(count=2)]
    assert run(slices=slices, version=version)["status"] == status


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36"])
def test_an_invalid_pool_reached_by_the_search_is_an_error(version):
    slices = [resource_slice(devices=[device("gpu-0"), device("gpu-0")])]
    output = run(slices=slices, version=version)
    assert output["status"] == "error"


def test_1_34_errors_on_an_invalid_pool_only_if_the_search_reaches_it():
    slices = [
        resource_slice("a", devices=[device("ok")], pool="a-pool"),
        resource_slice("b", devices=[device("dup"), device("dup")], pool="b-pool"),
    ]
    assert devices_of(run(slices=slices, version="1.34")) == ["ok"]


def test_1_35_uses_valid_pools_before_reporting_invalid_ones():
    slices = [
        resource_slice("a", devices=[device("dup"), device("dup")], pool="a-pool"),
        resource_slice("b", devices=[device("ok")], pool="b-pool"),
    ]
    assert devices_of(run(slices=slices, version="1.35")) == ["ok"]
    output = run(slices=slices, version="1.34")
    assert output["status"] == "error" and "is invalid" in output["error"]


def test_1_35_counts_slices_of_the_pool_that_target_other_nodes():
    slices = [
        resource_slice("mine", devices=[device("gpu-0")], node_name="node-1", count=2),
        resource_slice("theirs", devices=[device("gpu-1")], node_name="node-2", count=2),
    ]
    assert devices_of(run(slices=slices, version="1.35")) == ["gpu-0"]


def test_1_35_drops_a_pool_that_has_a_newer_generation_elsewhere():
    slices = [
        resource_slice(
            "mine", devices=[device("gpu-0")], node_name="node-1", count=2, generation=1
        ),
        resource_slice(
            "theirs", devices=[device("gpu-1")], node_name="node-2", count=1, generation=2
        ),
    ]
    assert run(slices=slices, version="1.35")["status"] == "unsatisfiable"


def _fields(*requirements):
    return {"nodeSelector": {"nodeSelectorTerms": [{"matchFields": list(requirements)}]}}


@pytest.mark.parametrize(
    ("selection", "outcome"),
    [
        # upstream's field selector: another key reads as "" (no error)
        (_fields({"key": "spec.unschedulable", "operator": "In", "values": ["true"]}), "none"),
        (_fields({"key": "spec.unschedulable", "operator": "NotIn", "values": ["x"]}), "node"),
        (_fields({"key": "spec.unschedulable", "operator": "In", "values": [""]}), "node"),
        (_fields({"key": "metadata.name", "operator": "NotIn", "values": ["node-2"]}), "node"),
        # In/NotIn with several values (or none) cannot be parsed: the allocation fails
        (_fields({"key": "metadata.name", "operator": "In", "values": ["node-1", "x"]}), "error"),
        (_fields({"key": "metadata.name", "operator": "NotIn", "values": []}), "error"),
        (_fields({"key": "metadata.name", "operator": "Exists"}), "error"),
    ],
)
def test_slice_match_fields_follow_upstreams_field_selectors(selection, outcome):
    output = run(slices=[resource_slice(node_name=None, **selection)], nodes=[node("node-1")])
    expected = {"node": "allocated", "none": "unsatisfiable", "error": "error"}[outcome]
    assert output["status"] == expected, output


@pytest.mark.parametrize(
    ("selection", "labels", "visible"),
    [
        ({"allNodes": True}, {}, True),
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                }
            },
            {"zone": "a"},
            True,
        ),
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                }
            },
            {"zone": "b"},
            False,
        ),
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "zone", "operator": "NotIn", "values": ["a"]}
                            ]
                        }
                    ]
                }
            },
            {},
            True,
        ),
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["4"]}]}
                    ]
                }
            },
            {"gpus": "8"},
            True,
        ),
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "gpus", "operator": "Lt", "values": ["4"]}]}
                    ]
                }
            },
            {"gpus": "8"},
            False,
        ),
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "x", "operator": "Exists"}]}
                    ]
                }
            },
            {"x": ""},
            True,
        ),
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}
                    ]
                }
            },
            {"x": ""},
            False,
        ),
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
                            ]
                        }
                    ]
                }
            },
            {},
            True,
        ),
        ({"nodeSelector": {"nodeSelectorTerms": [{}]}}, {}, False),
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {},
                        {"matchExpressions": [{"key": "x", "operator": "Exists"}]},
                    ]
                }
            },
            {"x": "1"},
            True,
        ),
    ],
)
def test_slice_node_selection_follows_node_affinity_semantics(selection, labels, visible):
    slices = [resource_slice(node_name=None, **selection)]
    output = run(slices=slices, nodes=[node("node-1", **labels)])
    assert (output["status"] == "allocated") is visible


def test_per_device_node_selection_filters_devices_and_needs_the_feature():
    devices = [
        dict(device("elsewhere"), nodeName="node-2"),
        dict(device("here"), nodeName="node-1"),
    ]
    slices = [resource_slice(node_name=None, devices=devices, perDeviceNodeSelection=True)]
    assert devices_of(run(slices=slices)) == ["here"]
    assert run(slices=slices, features={"partitionableDevices": False})["status"] == "unsatisfiable"


def test_a_slice_without_node_selection_is_ignored():
    assert run(slices=[resource_slice(node_name=None)])["status"] == "unsatisfiable"
