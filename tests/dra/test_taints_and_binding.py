"""Device taints and tolerations (§11) and binding conditions (§12)."""

import pytest

from .cases import ALL_FEATURES, claim, devices_of, request, resource_slice, run


def tainted(effect="NoSchedule", key="gpu.nvidia.com/xid", value="48"):
    return [
        resource_slice(
            devices=[
                {"name": "sick", "taints": [{"key": key, "value": value, "effect": effect}]},
                {"name": "well"},
            ]
        )
    ]


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        (None, False),
        ({"key": "gpu.nvidia.com/xid", "operator": "Exists"}, True),
        ({"key": "gpu.nvidia.com/xid", "operator": "Equal", "value": "48"}, True),
        ({"key": "gpu.nvidia.com/xid", "value": "48"}, True),
        ({"key": "gpu.nvidia.com/xid", "value": "13"}, False),
        ({"operator": "Exists"}, True),
        ({"operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "other", "operator": "Exists"}, False),
    ],
)
def test_taints_must_be_tolerated(toleration, tolerated):
    fields = {"tolerations": [toleration]} if toleration else {}
    claims = [claim(requests=[request(count=2, **fields)])]
    assert (run(claims=claims, slices=tainted())["status"] == "allocated") is tolerated


def test_an_untolerated_taint_makes_the_search_skip_the_device():
    assert devices_of(run(slices=tainted())) == ["well"]


def test_taints_are_ignored_without_the_feature():
    features = dict(ALL_FEATURES, deviceTaints=False)
    assert devices_of(run(slices=tainted(), features=features)) == ["sick"]


@pytest.mark.parametrize(("version", "blocks"), [("1.34", True), ("1.35", False)])
def test_the_none_effect_never_blocks_from_1_35_on(version, blocks):
    output = run(slices=tainted(effect="None"), version=version)
    assert devices_of(output) == (["well"] if blocks else ["sick"])


def test_all_mode_fails_on_an_untolerated_taint():
    claims = [claim(requests=[request(allocationMode="All")])]
    assert run(claims=claims, slices=tainted())["status"] == "unsatisfiable"


def binding_slices():
    return [
        resource_slice(
            devices=[
                {
                    "name": "fabric",
                    "bindingConditions": ["attached"],
                    "bindingFailureConditions": ["failed"],
                    "bindsToNode": True,
                }
            ]
        )
    ]


def test_devices_with_binding_conditions_need_both_features():
    assert (
        run(slices=binding_slices(), features=dict(ALL_FEATURES, deviceStatus=False))["status"]
        == "unsatisfiable"
    )
    output = run(slices=binding_slices())
    entry = output["allocations"][0]["devices"]["results"][0]
    assert entry["bindingConditions"] == ["attached"]
    assert entry["bindingFailureConditions"] == ["failed"]


def test_pools_with_binding_conditions_are_tried_last():
    slices = binding_slices() + [resource_slice("z", pool="z-pool", devices=[{"name": "plain"}])]
    assert devices_of(run(slices=slices)) == ["plain"]


def test_binds_to_node_makes_the_allocation_node_local():
    slices = [
        resource_slice(
            node_name=None,
            allNodes=True,
            devices=[{"name": "fabric", "bindingConditions": ["a"], "bindsToNode": True}],
        )
    ]
    output = run(slices=slices)
    assert output["allocations"][0]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0][
        "values"
    ] == ["node-1"]
