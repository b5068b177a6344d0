"""Checks before searching produce errors, not "unsatisfiable" (dra-semantics §5, §14)."""

import pytest

from dra.allocator import run_case

from .cases import (
    ALL_FEATURES,
    case,
    claim,
    device_class,
    first_available,
    request,
    resource_slice,
    run,
    subrequest,
)

NO_FEATURES: dict[str, bool] = {}


@pytest.mark.parametrize(
    ("claims", "features", "message"),
    [
        (
            [claim(requests=[request(device_class_name="missing")])],
            ALL_FEATURES,
            'could not retrieve device class missing: deviceclass.resource.k8s.io "missing" '
            "not found",
        ),
        (
            [claim(requests=[request(device_class_name="")])],
            ALL_FEATURES,
            "missing device class name",
        ),
        (
            [claim(requests=[first_available("r", subrequest("a"))])],
            NO_FEATURES,
            "has subrequests, but the DRAPrioritizedList feature is disabled",
        ),
        (
            [claim(requests=[request(adminAccess=False)])],
            NO_FEATURES,
            "admin access is requested, but the feature is disabled",
        ),
        (
            [claim(requests=[request(allocationMode="Some")])],
            ALL_FEATURES,
            "unsupported count mode Some",
        ),
        (
            [claim(requests=[request(count=33)])],
            ALL_FEATURES,
            "claim default/claim-0: number of requested devices 33 exceeds the claim limit of 32",
        ),
        (
            [claim(requests=[request(f"r{i}", count=3) for i in range(11)])],
            ALL_FEATURES,
            "exceeds the claim limit of 32",
        ),
        (
            [
                claim(
                    requests=[
                        first_available("r", subrequest("a", count=40), subrequest("b", count=33))
                    ]
                )
            ],
            ALL_FEATURES,
            "number of requested devices 33 exceeds",
        ),
        (
            [claim(constraints=[{"requests": ["req-0"]}])],
            ALL_FEATURES,
            "claim default/claim-0, constraint #0: empty constraint (unsupported constraint type?)",
        ),
        (
            [
                claim(
                    requests=[
                        {"name": "req-0", "exactly": {"deviceClassName": "gpu", "selectors": [{}]}}
                    ]
                )
            ],
            ALL_FEATURES,
            "selector #0: CEL expression empty (unsupported selector type?)",
        ),
        (
            [claim(requests=[request(capacity={"requests": {"memory": "1Gi"}})])],
            {"consumableCapacity": False, "deviceBinding": True, "deviceStatus": True},
            "has capacity requests, but the DRAConsumableCapacity feature is disabled",
        ),
    ],
)
def test_it_rejects_requests_it_cannot_handle_with_an_error(claims, features, message):
    output = run(claims=claims, features=features)
    assert output["status"] == "error"
    assert message in output["error"]


def test_a_minimum_over_subrequests_within_the_limit_is_accepted():
    claims = [
        claim(requests=[first_available("r", subrequest("a", count=40), subrequest("b", count=1))])
    ]
    output = run(claims=claims)
    assert output["status"] == "allocated"
    assert output["allocations"][0]["devices"]["results"][0]["request"] == "r/b"


def test_1_34_with_only_ga_features_silently_ignores_a_stray_capacity_request():
    claims = [claim(requests=[request(capacity={"requests": {"memory": "1Gi"}})])]
    output = run(claims=claims, features={"adminAccess": True}, version="1.34")
    assert output["status"] == "allocated"


@pytest.mark.parametrize(
    ("version", "features", "status"),
    [
        # 1.34: only the experimental implementation (picked for binding alone) checks.
        ("1.34", {"deviceBinding": True}, "error"),
        # 1.35+: binding without device status picks the implementation that ignores them.
        ("1.35", {"deviceBinding": True}, "allocated"),
        ("1.36", {"deviceBinding": True}, "allocated"),
        ("1.36", {"partitionableDevices": True, "prioritizedList": True}, "allocated"),
        ("1.36", {"deviceBinding": True, "deviceStatus": True}, "error"),
    ],
)
def test_capacity_requests_with_consumable_capacity_off_follow_the_variant_upstream_picks(
    version, features, status
):
    """Checked against upstream 1.34.9 and 1.36.3 (scripts/upstream_differential.py)."""
    claims = [claim(requests=[request(capacity={"requests": {"memory": "1Gi"}})])]
    output = run(claims=claims, features=features, version=version)
    assert output["status"] == status


def test_distinct_attribute_is_an_empty_constraint_for_the_1_34_incubating_variant():
    claims = [claim(constraints=[{"distinctAttribute": "gpu.example.com/x"}])]
    output = run(claims=claims, features={"adminAccess": True}, version="1.34")
    assert output["status"] == "error"
    assert "empty constraint" in output["error"]


@pytest.mark.parametrize(
    ("selector", "where"),
    [
        (
            "device.driver ==",
            "class gpu: selector #0: CEL compile error: compilation failed: ERROR: <input>:1:",
        ),
        ("device.nosuch == 1", "undefined field 'nosuch'"),
    ],
)
def test_class_selectors_that_fail_to_compile_name_the_class_index_and_position(selector, where):
    output = run(classes=[device_class("gpu", selector)])
    assert output["status"] == "error"
    assert where in output["error"]


def test_request_selectors_that_fail_to_compile_name_the_claim_and_index():
    claims = [claim(requests=[request(selectors=["true", "device.attributes['x'].y +"])])]
    output = run(claims=claims)
    assert output["status"] == "error"
    assert output["error"].startswith("claim default/claim-0: selector #1: CEL compile error:")
    assert "<input>:1:" in output["error"]


def test_runtime_errors_name_the_device():
    claims = [
        claim(requests=[request(selectors=['device.attributes["gpu.example.com"].model == "x"'])])
    ]
    output = run(claims=claims)
    assert output["status"] == "error"
    assert output["error"] == (
        "claim default/claim-0: selector #0 on device gpu.example.com/pool-1/gpu-0: "
        "CEL runtime error: no such key: model"
    )


def test_selectors_over_the_length_limit_are_errors():
    long_selector = "true && " * 1400 + "true"
    output = run(classes=[device_class("gpu", long_selector)])
    assert output["status"] == "error"
    assert "too long" in output["error"]


def test_a_selector_error_on_a_device_the_search_never_reaches_does_not_matter():
    slices = [
        resource_slice(
            devices=[{"name": "gpu-0", "attributes": {"model": {"string": "a"}}}, {"name": "gpu-1"}]
        )
    ]
    claims = [
        claim(requests=[request(selectors=['device.attributes["gpu.example.com"].model == "a"'])])
    ]
    assert run(claims=claims, slices=slices)["status"] == "allocated"


def test_malformed_objects_are_errors_naming_the_object():
    broken = resource_slice()
    del broken["spec"]["pool"]
    output = run(slices=[broken])
    assert output["status"] == "error"
    assert output["error"] == "resourceSlices[0] (slice-1): spec.pool: required"


@pytest.mark.parametrize("version", ["1.20", "1.33", "v1.33.4", "2.0"])
def test_a_kubernetes_version_without_the_v1_dra_api_is_an_error(version):
    output = run(version=version)
    assert output == {
        "name": "case",
        "status": "error",
        "error": f"kubernetesVersion: {version!r} is not supported: DRA's resource.k8s.io/v1 "
        "API needs Kubernetes 1.34 or newer",
    }


@pytest.mark.parametrize("version", ["1.34", "v1.35.2", "1.36"])
def test_supported_kubernetes_versions_allocate(version):
    assert run(version=version)["status"] == "allocated"


def test_an_unknown_feature_name_is_an_error_listing_the_known_ones():
    output = run(features={**ALL_FEATURES, "prioritisedList": True, "DRAAdminAccess": False})
    assert output["status"] == "error"
    assert output["error"] == (
        "features: unknown feature 'DRAAdminAccess', 'prioritisedList' (known: adminAccess, "
        "prioritizedList, partitionableDevices, consumableCapacity, deviceTaints, deviceBinding, "
        "deviceStatus)"
    )


def test_a_case_without_claims_is_an_error_not_unsatisfiable():
    assert run(claims=[]) == {"name": "case", "status": "error", "error": "no claims to allocate"}
    body = case()
    del body["claims"]
    assert run_case(body)["error"] == "no claims to allocate"
