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


def test_a_requested_capacity_name_must_match_the_device_s_exactly():
    # Upstream (1.34 to 1.36) looks the request's names up as written: the driver's domain
    # is not added or dropped, so "gpu.example.com/compute" misses a capacity named "compute".
    qualified = [claim(requests=[request(capacity={"requests": {"gpu.example.com/compute": "1"}})])]
    assert run(claims=qualified, slices=shared_gpu())["status"] == "unsatisfiable"
    assert run(claims=asking("1"), slices=shared_gpu())["status"] == "allocated"


def test_step_rounded_amounts_are_printed_as_binary_si():
    # roundUpRange returns resource.NewQuantity(value, BinarySI), whatever the step's format.
    policy = {"default": "1024", "validRange": {"min": "0", "step": "1024"}}
    output = run(claims=asking("1500"), slices=shared_gpu(policy, value="8192"))
    assert output["allocations"][0]["devices"]["results"][0]["consumedCapacity"] == {
        "compute": "2Ki"
    }
    # Amounts taken as they are keep their own spelling.
    output = run(claims=asking("2048"), slices=shared_gpu(value="8192"))
    assert output["allocations"][0]["devices"]["results"][0]["consumedCapacity"] == {
        "compute": "2048"
    }


def test_backing_out_of_a_zero_share_after_a_larger_one_is_not_a_crash():
    # The second share brings the device's running total back to zero when it is undone;
    # undoing the first (zero) share then finds nothing to subtract from, as upstream.
    output = run(claims=asking("0", "40", "101"), slices=shared_gpu())
    assert output["status"] == "unsatisfiable"


def two_device_slice(first):
    shared = {"name": "gpu-1", "allowMultipleAllocations": True}
    shared["capacity"] = {"compute": {"value": "100"}}
    return [resource_slice(devices=[first, shared])]


def test_1_34_checks_the_capacity_of_the_slice_s_device_at_the_request_s_device_index():
    # 1.34's allocateDevice re-checks the capacity of slice.Spec.Devices[r.deviceIndex], the
    # device's index within the request, not within the slice (fixed in 1.35). For the first
    # device of a request that is the slice's first device, which lacks "compute" here.
    slices = two_device_slice({"name": "gpu-0"})
    assert run(claims=asking("10"), slices=slices, version="1.34")["status"] == "unsatisfiable"
    assert devices_of(run(claims=asking("10"), slices=slices, version="1.35")) == ["gpu-1"]
    # Where the slice's first device has room too, 1.34 takes gpu-1 as the others do.
    roomy = {"name": "gpu-0", "capacity": {"compute": {"value": "10"}}}
    output = run(claims=asking("10"), slices=two_device_slice(roomy), version="1.34")
    assert devices_of(output) == ["gpu-0"]
    output = run(
        claims=[
            claim(
                requests=[
                    request(
                        selectors=["device.allowMultipleAllocations"],
                        capacity={"requests": {"compute": "10"}},
                    )
                ]
            )
        ],
        slices=two_device_slice(roomy),
        version="1.34",
    )
    assert devices_of(output) == ["gpu-1"]


def test_1_34_fails_the_second_device_of_a_request_in_a_one_device_slice():
    # The second device of a request is checked as slice.Spec.Devices[1]: past the end of a
    # one-device slice, where upstream 1.34 panics. 1.35 gives the shared device twice, 1.36
    # starts the second device after the first and finds none.
    claims = [claim(requests=[request(count=2, capacity={"requests": {"compute": "10"}})])]
    output = run(claims=claims, slices=shared_gpu(), version="1.34")
    assert output["status"] == "error"
    assert "index out of range [1] with length 1" in output["error"]
    assert devices_of(run(claims=claims, slices=shared_gpu(), version="1.35")) == [
        "gpu-0",
        "gpu-0",
    ]
    assert run(claims=claims, slices=shared_gpu(), version="1.36")["status"] == "unsatisfiable"


def test_1_34_fails_an_all_request_whose_second_device_is_alone_in_its_slice():
    # All requests take their devices through the same allocateDevice, the device's index in
    # the request's list standing for its index within the slice.
    slices = [
        resource_slice(f"slice-{index}", devices=[{"name": f"gpu-{index}"}], count=2)
        for index in range(2)
    ]
    claims = [claim(requests=[request(allocationMode="All")])]
    output = run(claims=claims, slices=slices, version="1.34")
    assert output["status"] == "error"
    assert "index out of range [1] with length 1" in output["error"]
    assert devices_of(run(claims=claims, slices=slices, version="1.35")) == ["gpu-0", "gpu-1"]
