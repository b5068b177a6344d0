"""Explanations ("why can't I get this?") and selector previews."""

from dra.allocator import build_cluster, explain_case, preview_selector

from .cases import allocated_claim, case, claim, device, request, resource_slice, result


def test_it_explains_that_every_matching_device_is_taken():
    slices = [resource_slice(devices=[device("gpu-0", model="a"), device("gpu-1", model="b")])]
    claims = [
        claim(requests=[request(selectors=['device.attributes["gpu.example.com"].model == "a"'])])
    ]
    body = case(claims=claims, slices=slices, allocated=[allocated_claim(result("gpu-0"))])
    [explanation] = explain_case(body)
    assert explanation.counts["visible"] == 2
    assert explanation.counts["class"] == 2
    assert explanation.counts["selectors"] == 1
    assert explanation.counts["free"] == 0
    assert explanation.blocking_stage == "free"
    assert explanation.to_json()["node"] == "node-1"


def test_it_reports_selector_errors_in_the_explanation():
    claims = [
        claim(requests=[request(selectors=['device.attributes["gpu.example.com"].nope == 1'])])
    ]
    [explanation] = explain_case(case(claims=claims))
    assert explanation.blocking_stage == "selectors"
    assert "no such key: nope" in explanation.errors[0]


def test_the_preview_lists_matching_devices_and_errors():
    slices = [resource_slice(devices=[device("gpu-0", model="a"), device("gpu-1")])]
    preview = preview_selector(
        'device.attributes["gpu.example.com"].model == "a"', case(slices=slices)
    )
    assert preview.matched == ["gpu.example.com/pool-1/gpu-0"]
    assert preview.errors == ["gpu.example.com/pool-1/gpu-1: no such key: model"]


def test_the_preview_reports_compile_errors():
    assert "Syntax error" in preview_selector("device.driver ==", case()).error


def test_the_cluster_index_answers_previews_too():
    slices = [resource_slice(devices=[device("gpu-0", model="a"), device("gpu-1", model="b")])]
    cluster, _ = build_cluster(case(slices=slices))
    matched, errors = cluster.matching_devices('device.attributes["gpu.example.com"].model == "b"')
    assert matched == ["gpu.example.com/pool-1/gpu-1"] and errors == []


def test_a_device_whose_counters_a_partition_took_leaves_at_the_capacity_stage():
    counters = {"memory": {"value": "8Gi"}}
    gpu = {
        **device("gpu-0", kind="whole"),
        "consumesCounters": [{"counterSet": "gpu-0", "counters": counters}],
    }
    part = {
        **device("gpu-0-part", kind="part"),
        "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "2Gi"}}}],
    }
    slices = [
        resource_slice(
            "counters",
            devices=[],
            count=2,
            sharedCounters=[{"name": "gpu-0", "counters": counters}],
        ),
        resource_slice("devices", devices=[gpu, part], count=2),
    ]
    whole = request(selectors=['device.attributes["gpu.example.com"].kind == "whole"'])
    body = case(
        claims=[claim(requests=[whole])],
        slices=slices,
        allocated=[allocated_claim(result("gpu-0-part"))],
    )
    [explanation] = explain_case(body)
    # Not held by a claim, but a partition took its counters: the allocator cannot give it out.
    assert explanation.counts["free"] == 1
    assert explanation.counts["capacity"] == 0
    assert explanation.blocking_stage == "capacity"
