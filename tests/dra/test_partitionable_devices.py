"""Shared counters in the 1.34 same-slice layout and the 1.35+ pool-scoped layout (§9)."""

import pytest

from .cases import claim, devices_of, fixture_items, node, request, resource_slice, run

COUNTERS = [{"name": "gpu-0-counters", "counters": {"memory": {"value": "40Gi"}}}]


def partition(name, memory):
    return {
        "name": name,
        "consumesCounters": [
            {"counterSet": "gpu-0-counters", "counters": {"memory": {"value": memory}}}
        ],
    }


def layout_1_34():
    devices = [partition("whole", "40Gi"), partition("half-a", "20Gi"), partition("half-b", "20Gi")]
    return [resource_slice(devices=devices, sharedCounters=COUNTERS)]


def layout_1_35():
    devices = [partition("whole", "40Gi"), partition("half-a", "20Gi"), partition("half-b", "20Gi")]
    return [
        resource_slice("a-counters", devices=[], count=2, sharedCounters=COUNTERS),
        resource_slice("b-devices", devices=devices, count=2),
    ]


@pytest.mark.parametrize(
    ("version", "layout"), [("1.34", layout_1_34), ("1.35", layout_1_35), ("1.36", layout_1_35)]
)
def test_counters_limit_how_many_partitions_fit(version, layout):
    two = [claim(requests=[request(count=2)])]
    assert devices_of(run(claims=two, slices=layout(), version=version)) == ["half-a", "half-b"]
    three = [claim(requests=[request(count=3)])]
    assert run(claims=three, slices=layout(), version=version)["status"] == "unsatisfiable"


@pytest.mark.parametrize(("version", "layout"), [("1.34", layout_1_34), ("1.36", layout_1_35)])
def test_allocated_partitions_consume_counters(version, layout):
    taken = {
        "metadata": {"name": "t"},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "r",
                            "driver": "gpu.example.com",
                            "pool": "pool-1",
                            "device": "half-a",
                        }
                    ]
                }
            }
        },
    }
    output = run(slices=layout(), allocated=[taken], version=version)
    assert devices_of(output) == ["half-b"]


def test_partitions_are_unusable_without_the_feature():
    assert run(slices=layout_1_34(), features={}, version="1.34")["status"] == "unsatisfiable"


def test_1_35_ignores_counter_slices_when_the_feature_is_off():
    assert run(slices=layout_1_35(), features={}, version="1.35")["status"] == "unsatisfiable"


def test_1_35_treats_a_reference_to_a_missing_counter_set_as_an_invalid_pool():
    broken = layout_1_35()
    broken[1]["spec"]["devices"][0]["consumesCounters"][0]["counterSet"] = "nope"
    output = run(slices=broken, version="1.35")
    assert output["status"] == "error"


def test_the_dynamic_mig_fixture_fits_the_documented_placements():
    slices = fixture_items("nvidia-a100-mig.json")
    classes = fixture_items("deviceclasses.json")
    profiles = ["1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"]
    requests = [
        request(
            f"r{index}",
            "mig.nvidia.com",
            selectors=[f'device.attributes["gpu.nvidia.com"].profile == "{profile}"'],
        )
        for index, profile in enumerate(profiles)
    ]
    claims = [
        claim(requests=requests, constraints=[{"matchAttribute": "gpu.nvidia.com/parentUUID"}])
    ]
    output = run(
        claims=claims,
        slices=slices,
        classes=classes,
        nodes=[node("dgx-a100-01")],
        node_name="dgx-a100-01",
    )
    picked = devices_of(output)
    assert len(picked) == 4 and len({name.split("-mig-")[0] for name in picked}) == 1
    five = [
        claim(
            requests=requests
            + [
                request(
                    "r4",
                    "mig.nvidia.com",
                    selectors=['device.attributes["gpu.nvidia.com"].profile == "7g.40gb"'],
                )
            ],
            constraints=[{"matchAttribute": "gpu.nvidia.com/parentUUID"}],
        )
    ]
    assert (
        run(
            claims=five,
            slices=slices,
            classes=classes,
            nodes=[node("dgx-a100-01")],
            node_name="dgx-a100-01",
        )["status"]
        == "unsatisfiable"
    )
