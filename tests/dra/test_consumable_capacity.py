"""Consumable capacity: request policies, shares and share ids (§10)."""

from .cases import allocated_claim, claim, devices_of, request, resource_slice, result, run


def shared_gpu(policy=None, value="100"):
    capacity = {"compute": {"value": value}}
    if policy:
        capacity["compute"]["requestPolicy"] = policy
    return [
        resource_slice(
            devices=[{"name": "gpu-0", "allowMultipleAllocations": True, "capacity": capacity}]
        )
    ]


def asking(*amounts):
    return [
        claim(
            requests=[
                request(f"r{index}", capacity={"requests": {"compute": amount}})
                for index, amount in enumerate(amounts)
            ]
        )
    ]


def test_multi_allocatable_devices_are_shared_until_capacity_runs_out():
    output = run(claims=asking("40", "60"), slices=shared_gpu())
    results = output["allocations"][0]["devices"]["results"]
    assert [entry["consumedCapacity"] for entry in results] == [
        {"compute": "40"},
        {"compute": "60"},
    ]
    assert results[0]["shareID"] != results[1]["shareID"]
    assert run(claims=asking("40", "61"), slices=shared_gpu())["status"] == "unsatisfiable"


def test_share_ids_are_stable_across_runs():
    assert run(claims=asking("40"), slices=shared_gpu()) == run(
        claims=asking("40"), slices=shared_gpu()
    )


def test_without_a_request_a_share_takes_the_default_or_everything():
    output = run(
        claims=[claim()],
        slices=shared_gpu({"default": "10", "validRange": {"min": "10", "step": "10"}}),
    )
    assert output["allocations"][0]["devices"]["results"][0]["consumedCapacity"] == {
        "compute": "10"
    }
    output = run(claims=[claim()], slices=shared_gpu())
    assert output["allocations"][0]["devices"]["results"][0]["consumedCapacity"] == {
        "compute": "100"
    }


def test_requests_are_rounded_up_to_the_policy_grid():
    policy = {"default": "10", "validRange": {"min": "10", "max": "80", "step": "10"}}
    output = run(claims=asking("25"), slices=shared_gpu(policy))
    assert output["allocations"][0]["devices"]["results"][0]["consumedCapacity"] == {
        "compute": "30"
    }
    assert run(claims=asking("81"), slices=shared_gpu(policy))["status"] == "unsatisfiable"


def test_valid_values_round_up_to_the_next_listed_value():
    output = run(
        claims=asking("15"), slices=shared_gpu({"default": "10", "validValues": ["10", "20", "50"]})
    )
    assert output["allocations"][0]["devices"]["results"][0]["consumedCapacity"] == {
        "compute": "20"
    }
    assert (
        run(
            claims=asking("60"),
            slices=shared_gpu({"default": "10", "validValues": ["10", "20", "50"]}),
        )["status"]
        == "unsatisfiable"
    )


def test_existing_shares_count_against_capacity():
    taken = allocated_claim(
        result(
            "gpu-0",
            shareID="00000000-0000-0000-0000-000000000001",
            consumedCapacity={"compute": "70"},
        )
    )
    assert run(claims=asking("30"), slices=shared_gpu(), allocated=[taken])["status"] == "allocated"
    assert (
        run(claims=asking("31"), slices=shared_gpu(), allocated=[taken])["status"]
        == "unsatisfiable"
    )


def test_a_device_lacking_a_requested_capacity_is_skipped():
    slices = [resource_slice(devices=[{"name": "plain"}])]
    assert run(claims=asking("1"), slices=slices)["status"] == "unsatisfiable"


def test_dedicated_devices_use_the_capacity_request_only_as_a_filter():
    slices = [
        resource_slice(
            devices=[
                {"name": "small", "capacity": {"compute": {"value": "10"}}},
                {"name": "big", "capacity": {"compute": {"value": "100"}}},
            ]
        )
    ]
    output = run(claims=asking("50"), slices=slices)
    assert devices_of(output) == ["big"]
    assert "shareID" not in output["allocations"][0]["devices"]["results"][0]
