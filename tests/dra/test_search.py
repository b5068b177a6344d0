"""The depth-first search: ExactCount, All, in-use devices, adminAccess, firstAvailable."""

import pytest

from .cases import (
    allocated_claim,
    claim,
    device,
    devices_of,
    first_available,
    request,
    resource_slice,
    result,
    run,
    subrequest,
)

FOUR = [resource_slice(devices=[device(f"gpu-{index}", index=index) for index in range(4)])]


@pytest.mark.parametrize(
    ("count", "expected"),
    [(1, ["gpu-0"]), (2, ["gpu-0", "gpu-1"]), (4, ["gpu-0", "gpu-1", "gpu-2", "gpu-3"])],
)
def test_it_takes_the_first_devices_in_order(count, expected):
    assert devices_of(run(claims=[claim(requests=[request(count=count)])], slices=FOUR)) == expected


def test_it_is_unsatisfiable_when_not_enough_devices_exist():
    assert (
        run(claims=[claim(requests=[request(count=5)])], slices=FOUR)["status"] == "unsatisfiable"
    )


def test_it_is_unsatisfiable_without_any_slice():
    assert run(slices=[])["status"] == "unsatisfiable"


def test_it_skips_devices_allocated_to_other_claims():
    allocated = [allocated_claim(result("gpu-0"), result("gpu-2"))]
    output = run(claims=[claim(requests=[request(count=2)])], slices=FOUR, allocated=allocated)
    assert devices_of(output) == ["gpu-1", "gpu-3"]


def test_admin_access_results_elsewhere_do_not_make_devices_busy():
    allocated = [allocated_claim(result("gpu-0", adminAccess=True))]
    assert devices_of(run(slices=FOUR, allocated=allocated)) == ["gpu-0"]


def test_admin_access_requests_may_use_devices_in_use():
    allocated = [allocated_claim(*(result(f"gpu-{index}") for index in range(4)))]
    output = run(
        claims=[claim(requests=[request(count=2, adminAccess=True)])],
        slices=FOUR,
        allocated=allocated,
    )
    assert devices_of(output) == ["gpu-0", "gpu-1"]
    assert output["allocations"][0]["devices"]["results"][0]["adminAccess"] is True


def test_claims_of_one_pod_never_share_a_device():
    claims = [claim("a", requests=[request(count=3)]), claim("b", requests=[request(count=1)])]
    output = run(claims=claims, slices=FOUR)
    assert devices_of(output, 0) == ["gpu-0", "gpu-1", "gpu-2"]
    assert devices_of(output, 1) == ["gpu-3"]


def test_claims_are_allocated_all_or_nothing():
    claims = [claim("a", requests=[request(count=3)]), claim("b", requests=[request(count=2)])]
    assert run(claims=claims, slices=FOUR)["status"] == "unsatisfiable"


def test_all_mode_takes_every_matching_device():
    claims = [
        claim(
            requests=[
                request(
                    allocationMode="All",
                    selectors=['device.attributes["gpu.example.com"].index % 2 == 0'],
                )
            ]
        )
    ]
    assert devices_of(run(claims=claims, slices=FOUR)) == ["gpu-0", "gpu-2"]


def test_all_mode_with_no_matching_device_is_unsatisfiable():
    claims = [claim(requests=[request(allocationMode="All", selectors=["false"])])]
    assert run(claims=claims, slices=FOUR)["status"] == "unsatisfiable"


def test_all_mode_fails_when_one_device_is_in_use():
    claims = [claim(requests=[request(allocationMode="All")])]
    output = run(claims=claims, slices=FOUR, allocated=[allocated_claim(result("gpu-1"))])
    assert output["status"] == "unsatisfiable"


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36"])
def test_all_mode_errors_on_an_incomplete_pool_of_any_driver(version):
    slices = FOUR + [resource_slice("other", driver="nic.example.com", pool="nics", count=2)]
    claims = [claim(requests=[request(allocationMode="All")])]
    output = run(claims=claims, slices=slices, version=version)
    assert output["status"] == "error"
    assert (
        "asks for all devices, but resource pool nic.example.com/nics is currently being updated"
        in output["error"]
    )


def test_first_available_takes_the_first_subrequest_that_works():
    claims = [
        claim(
            requests=[
                first_available("gpu", subrequest("big", count=8), subrequest("small", count=2))
            ]
        )
    ]
    output = run(claims=claims, slices=FOUR)
    assert [entry["request"] for entry in output["allocations"][0]["devices"]["results"]] == [
        "gpu/small",
        "gpu/small",
    ]


def test_first_available_backtracks_when_a_later_request_fails():
    claims = [
        claim(
            requests=[
                first_available("first", subrequest("three", count=3), subrequest("two", count=2)),
                request("second", count=2),
            ]
        )
    ]
    output = run(claims=claims, slices=FOUR)
    requests = [entry["request"] for entry in output["allocations"][0]["devices"]["results"]]
    assert requests == ["first/two", "first/two", "second", "second"]


def test_first_available_backtracks_across_claims():
    claims = [
        claim(
            "a",
            requests=[
                first_available("r", subrequest("three", count=3), subrequest("one", count=1))
            ],
        ),
        claim("b", requests=[request(count=3)]),
    ]
    output = run(claims=claims, slices=FOUR)
    assert devices_of(output, 0) == ["gpu-0"]
    assert devices_of(output, 1) == ["gpu-1", "gpu-2", "gpu-3"]


def test_result_limit_makes_first_available_try_a_smaller_subrequest():
    many = [resource_slice(devices=[device(f"gpu-{index}") for index in range(40)])]
    claims = [
        claim(
            requests=[
                request("fixed", count=20),
                first_available("flex", subrequest("huge", count=16), subrequest("fits", count=12)),
            ]
        )
    ]
    output = run(claims=claims, slices=many)
    results = output["allocations"][0]["devices"]["results"]
    assert len(results) == 32
    assert results[-1]["request"] == "flex/fits"


def test_an_empty_claim_gets_an_empty_allocation():
    output = run(claims=[claim(requests=[])])
    assert output["allocations"] == [{"devices": {}}]


def test_devices_of_other_nodes_are_not_visible():
    slices = [resource_slice(node_name="node-2")]
    assert run(slices=slices)["status"] == "unsatisfiable"


def test_1_36_combination_order_still_finds_the_same_first_solution_as_1_34():
    claims = [
        claim(
            requests=[
                request(count=2, selectors=['device.attributes["gpu.example.com"].index != 1'])
            ]
        )
    ]
    first = devices_of(run(claims=claims, slices=FOUR, version="1.34"))
    assert (
        first == devices_of(run(claims=claims, slices=FOUR, version="1.36")) == ["gpu-0", "gpu-2"]
    )
