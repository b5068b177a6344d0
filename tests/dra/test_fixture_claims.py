"""The drivers' demo claims from fixtures/claims.json, against the fixture inventory."""

import pytest

from dra.allocator import run_case

from .cases import case, fixture_items, node

NODES = [
    node(name)
    for name in ("dgx-a100-01", "dgx-h100-01", "dgx-h100-02", "dra-example-driver-cluster-worker")
]
FEATURES = {
    "adminAccess": True,
    "prioritizedList": True,
    "partitionableDevices": True,
    "deviceTaints": True,
}


def _claim(item):
    spec = item["spec"]["spec"] if item["kind"] == "ResourceClaimTemplate" else item["spec"]
    return {
        "metadata": {"name": item["metadata"]["name"], "namespace": item["metadata"]["namespace"]},
        "spec": spec,
    }


def _case(item, node_name=None):
    slices = (
        fixture_items("nvidia-dgx-h100.json")
        + fixture_items("dra-example-driver.json")
        + fixture_items("nvidia-a100-mig.json")
    )
    return case(
        claims=[_claim(item)],
        slices=slices,
        classes=fixture_items("deviceclasses.json"),
        nodes=NODES,
        features=FEATURES,
        node_name=node_name,
        version="1.36",
    )


TEMPLATES = {
    (item["metadata"]["namespace"], item["metadata"]["name"]): item
    for item in fixture_items("claims.json")
}


@pytest.mark.parametrize(
    ("key", "status"),
    [
        (("gpu-test1", "single-gpu"), "allocated"),
        (("gpu-test4", "mig-devices"), "allocated"),
        (("gpu-test5", "multiple-gpus"), "allocated"),
        (("gpu-test6", "a100"), "error"),  # selector reads the removed `index` attribute
        (("gpu-memory", "gpu-memory-template"), "allocated"),
        (("gpu-memory", "big-memory-gpu"), "unsatisfiable"),  # 81559Mi < 80Gi
        (("cel-selector", "single-gpu-cel"), "allocated"),
        (("prioritized-alternatives", "prioritized-gpu"), "allocated"),
        (("admin-access", "multiple-gpus-admin"), "allocated"),
    ],
)
def test_fixture_claims_get_the_documented_outcome(key, status):
    assert run_case(_case(TEMPLATES[key]))["status"] == status


def test_the_prioritized_fixture_falls_back_to_its_third_alternative():
    output = run_case(_case(TEMPLATES[("prioritized-alternatives", "prioritized-gpu")]))
    assert output["allocations"][0]["devices"]["results"][0]["request"] == "gpu/older-gpu"


def test_the_tainted_h100_is_skipped_on_its_node():
    item = TEMPLATES[("gpu-test1", "single-gpu")]
    body = _case(item, node_name="dgx-h100-02")
    body["claims"][0]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 8
    assert run_case(body)["status"] == "unsatisfiable"
    body["features"] = dict(FEATURES, deviceTaints=False)
    assert run_case(body)["status"] == "allocated"
