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
