"""AllocationResult assembly: results, configs and the node selector (§13)."""

import json

from .cases import (
    claim,
    device_class,
    first_available,
    node,
    request,
    resource_slice,
    run,
    subrequest,
)

OPAQUE = {"driver": "gpu.example.com", "parameters": {"mode": "x"}}


def test_class_configs_are_added_once_and_list_every_request_of_the_class():
    classes = [device_class("gpu", config=[{"opaque": OPAQUE}])]
    slices = [resource_slice(devices=[{"name": "a"}, {"name": "b"}])]
    output = run(
        claims=[claim(requests=[request("one"), request("two")])], classes=classes, slices=slices
    )
    assert output["allocations"][0]["devices"]["config"] == [
        {"source": "FromClass", "requests": ["one", "two"], "opaque": OPAQUE}
    ]


def test_claim_configs_follow_the_chosen_subrequest():
    config = [
        {"requests": ["gpu/big"], "opaque": {"driver": "d", "parameters": {"p": "big"}}},
        {"requests": ["gpu/small"], "opaque": {"driver": "d", "parameters": {"p": "small"}}},
        {"opaque": {"driver": "d", "parameters": {"p": "all"}}},
    ]
    claims = [
        claim(
            requests=[first_available("gpu", subrequest("big", count=5), subrequest("small"))],
            config=config,
        )
    ]
    output = run(claims=claims)
    assert output["allocations"][0]["devices"]["config"] == [
        {
            "source": "FromClaim",
            "requests": ["gpu/small"],
            "opaque": {"driver": "d", "parameters": {"p": "small"}},
        },
        {"source": "FromClaim", "opaque": {"driver": "d", "parameters": {"p": "all"}}},
    ]


def test_a_claim_config_naming_two_requests_is_repeated_per_request():
    config = [{"requests": ["one", "two"], "opaque": OPAQUE}]
    slices = [resource_slice(devices=[{"name": "a"}, {"name": "b"}])]
    output = run(
        claims=[claim(requests=[request("one"), request("two")], config=config)], slices=slices
    )
    assert len(output["allocations"][0]["devices"]["config"]) == 2


def test_node_local_devices_get_a_metadata_name_selector():
    output = run()
    assert output["allocations"][0]["nodeSelector"] == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
        ]
    }


def test_node_selectors_of_several_slices_merge_into_one_term():
    zone = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
        ]
    }
    rack = {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "rack", "operator": "In", "values": ["1"]},
                    {"key": "zone", "operator": "In", "values": ["a"]},
                ]
            }
        ]
    }
    slices = [
        resource_slice("s1", node_name=None, nodeSelector=zone, pool="p1"),
        resource_slice("s2", node_name=None, nodeSelector=rack, pool="p2"),
    ]
    output = run(
        claims=[claim(requests=[request(count=2)])],
        slices=slices,
        nodes=[node("node-1", zone="a", rack="1")],
    )
    assert output["allocations"][0]["nodeSelector"] == {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["a"]},
                    {"key": "rack", "operator": "In", "values": ["1"]},
                ]
            }
        ]
    }


def test_devices_available_everywhere_need_no_node_selector():
    output = run(slices=[resource_slice(node_name=None, allNodes=True)])
    assert "nodeSelector" not in output["allocations"][0]


def test_output_is_byte_stable_and_key_ordered():
    first = json.dumps(run())
    assert first == json.dumps(run())
    assert (
        first.index('"request"')
        < first.index('"driver"')
        < first.index('"pool"')
        < first.index('"device"')
    )
