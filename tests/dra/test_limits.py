"""Bounded in time and memory whatever the input: the cost limit of CEL, the nesting limits of
selectors and JSON lines, and the wall-clock limit of an allocation."""

import io
import json
import sys
import time

import pytest
from django.core.management import call_command

from dra.allocator import run_case
from dra.cel import CelCompileError, CelRuntimeError, compile_selector, device_input
from dra.model import Device

from .cases import case, claim, device, device_class, resource_slice

DEVICE = device_input(Device(name="d", attributes={}, capacity={}), "gpu.example.com", True)
COST_ERROR = "operation cancelled: actual cost limit exceeded"
DOUBLING = (
    'cel.bind(a, "xxxxxxxxxx", cel.bind(b, a+a+a+a+a+a+a+a+a+a, cel.bind(c, b+b+b+b+b+b+b+b+b+b, '
    "cel.bind(d, c+c+c+c+c+c+c+c+c+c, cel.bind(e, d+d+d+d+d+d+d+d+d+d, cel.bind(f, "
    "e+e+e+e+e+e+e+e+e+e, cel.bind(g, f+f+f+f+f+f+f+f+f+f, g.size() > 0)))))))"
)


def _quickly(function, *args, limit=10.0):
    """A runaway guard, not a benchmark: before the limits these inputs ran 10–100 s (or never
    answered); they now answer in milliseconds, so only a return of the runaway trips this,
    whatever the load on the machine running the suite."""
    started = time.monotonic()
    result = function(*args)
    assert time.monotonic() - started < limit
    return result


def _evaluate(expression):
    return compile_selector(expression).matches(DEVICE)


@pytest.mark.parametrize(
    "expression",
    [
        "lists.range(100000000).size() > 0",
        "lists.range(100000000).size() > 0 || true",  # a cancelled evaluation is not absorbed
        "lists.range(5000).map(x, lists.range(5000)).size() > 0",
        '"a"' + '.replace("a", "aaaaaaaaaa")' * 8 + ".size() > 0",
        DOUBLING,
        "sets.contains(lists.range(20000), lists.range(20000))",
        'cel.bind(s, "abcdefghij", '
        + "cel.bind(s, [s, s, s, s, s, s, s, s, s, s].join(), " * 7
        + "s.size() > 0"
        + ")" * 8,
        "cel.bind(l, lists.range(10), "
        + "cel.bind(l, [l, l, l, l, l, l, l, l, l, l].flatten(), " * 7
        + "l.size() > 0"
        + ")" * 8,
    ],
)
def test_runaway_selectors_fail_at_once_with_the_cost_error(expression):
    with pytest.raises(CelRuntimeError, match=COST_ERROR):
        _quickly(_evaluate, expression)


@pytest.mark.parametrize(
    "expression",
    [
        '"abc".replace("b", "xy") == "axyc"',
        '"aaa".replace("a", "b", 2) == "bba"',
        '"ab".replace("", "-") == "-a-b-"',
        '"a" + "b" == "ab" && [1] + [2] == [1, 2] && 1u + 2u == 3u && b"a" + b"b" == b"ab"',
        'duration("1s") + duration("1s") == duration("2s")',
        '["a", "b"].join("-") == "a-b" && [[1], [2]].flatten() == [1, 2]',
        '"%d-%s".format([3, "x"]) == "3-x" && strings.quote("a") == "\\"a\\""',
        "lists.range(500).map(x, x * 2).size() == 500",
        # upstream charges map 13 per element (cel-cpp's copy of the accumulator costs time only)
        "lists.range(3000).map(x, x).size() == 3000",
        "lists.range(9000).all(x, x >= 0)",
        'sets.contains([1, 2, 3], [2]) && {"a": 1}.all(k, k == "a")',
        '"x".replace("x", "y").replace("y", "z") == "z"',
    ],
)
def test_selectors_using_metered_operations_still_evaluate(expression):
    assert _evaluate(expression) is True


@pytest.mark.parametrize(
    "expression",
    ["dra_cost_add(3)", 'dra_cost_replace("a", "a", "b") == "b"', 'dra_cost_call("x", [])'],
)
def test_the_meter_functions_are_not_part_of_the_selector_language(expression):
    with pytest.raises(CelCompileError, match="undeclared reference"):
        _evaluate(expression)


def test_a_catastrophic_regular_expression_answers_at_once():
    # RE2 (Go's regexp) has no backtracking.
    assert _quickly(_evaluate, '"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!".find("(a+)+$") == ""')


@pytest.mark.parametrize(
    "expression",
    [
        "(" * 5000 + "true" + ")" * 5000,
        "!" * 5001 + "true",
        "1" + " + 1" * 2000 + " > 0",
        "[" * 3000 + "]" * 3000 + " == []",
        'device.attributes["a"]' + ".b" * 2000 + " == 1",
    ],
)
def test_deeply_nested_selectors_are_a_compile_error_naming_the_limit(expression):
    with pytest.raises(CelCompileError, match="nesting exceeds the limit of 50 levels"):
        _quickly(_evaluate, expression)


def test_long_flat_chains_of_and_or_are_not_nesting():
    assert _evaluate(" && ".join(["true"] * 1200)) is True
    assert _evaluate(" || ".join(["false"] * 1000)) is False


def test_a_selector_error_in_a_case_is_reported_not_raised():
    output = _quickly(
        run_case,
        case(classes=[device_class("gpu", "lists.range(100000000).size() > 0")]),
    )
    assert output["status"] == "error"
    assert COST_ERROR in output["error"]


def _competing_claims(count, devices):
    return case(
        claims=[claim(f"claim-{index}") for index in range(count)],
        slices=[resource_slice(devices=[device(f"gpu-{index}") for index in range(devices)])],
    )


def test_an_allocation_stops_at_its_time_limit_with_an_error_naming_it():
    # 11 claims for 10 identical devices: the depth-first search tries every permutation.
    output = _quickly(run_case, _competing_claims(11, 10), 0.2)
    assert output == {
        "name": "case",
        "status": "error",
        "error": "timed out trying to allocate devices: the allocation took longer than its "
        "limit of 0.2 s",
    }


def test_the_time_limit_also_bounds_a_search_over_every_node():
    nodes = [{"metadata": {"name": f"node-{index}", "labels": {}}} for index in range(3)]
    body = _competing_claims(11, 10)
    body["nodes"] = nodes
    body["node"] = None
    output = _quickly(run_case, body, 0.2)
    assert output["status"] == "error"
    assert "limit of 0.2 s" in output["error"]


def test_hundreds_of_claims_are_allocated_without_recursing_per_claim():
    output = _quickly(run_case, _competing_claims(600, 600))
    assert output["status"] == "allocated"
    assert len(output["allocations"]) == 600


def _command(lines, *arguments):
    out = io.StringIO()
    stdin = sys.stdin
    sys.stdin = io.StringIO("\n".join(lines) + "\n")
    try:
        call_command("allocate", *arguments, stdout=out)
    finally:
        sys.stdin = stdin
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_manage_py_allocate_takes_the_time_limit_as_an_option():
    outputs = _quickly(
        _command, [json.dumps(_competing_claims(11, 10)), json.dumps(case())], "--timeout", "0.2"
    )
    assert [output["status"] for output in outputs] == ["error", "allocated"]
    assert "limit of 0.2 s" in outputs[0]["error"]


@pytest.mark.parametrize(
    "line",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"a":' * 50_000 + "1" + "}" * 50_000,
        "[" * 100_000,  # unbalanced as well
    ],
)
def test_a_deeply_nested_json_line_is_an_error_and_the_next_line_still_answers(line):
    outputs = _quickly(_command, [line, json.dumps(dict(case(), name="after"))])
    assert outputs[0]["status"] == "error"
    assert outputs[1] == {**outputs[1], "name": "after", "status": "allocated"}


def test_a_line_nested_just_under_the_limit_is_read():
    nested = {"opaque": {"driver": "gpu.example.com", "parameters": {}}}
    inner = nested["opaque"]["parameters"]
    for _ in range(80):
        inner["x"] = {}
        inner = inner["x"]
    body = case(classes=[dict(device_class("gpu"), spec={"selectors": [], "config": [nested]})])
    outputs = _command([json.dumps(body)])
    assert outputs[0]["status"] == "allocated"


DEPTH_ERROR = {
    "name": None,
    "status": "error",
    "error": "invalid JSON: nested deeper than 100 levels",
}


@pytest.mark.parametrize(
    "line",
    [
        "[" * 1_000_000,  # 1 MB of opening brackets, never closed
        "[" * 101 + "]" * 101,
        "{" + '"a":{' * 100 + "}" * 101,
        "[" * 101 + "}" * 101,  # mismatched as well
        "]" * 10 + "[" * 200,
    ],
)
def test_a_line_nested_past_the_limit_gets_the_depth_error_at_once(line):
    outputs = _quickly(_command, [line, json.dumps(dict(case(), name="after"))])
    assert outputs[0] == DEPTH_ERROR
    assert outputs[1]["status"] == "allocated"


def test_a_line_nested_exactly_to_the_limit_is_decoded():
    outputs = _command(["[" * 100 + "]" * 100])
    assert outputs == [{"name": None, "status": "error", "error": "case: must be a JSON object"}]


def test_brackets_and_escaped_quotes_inside_strings_do_not_nest():
    name = '\\"' + "[{" * 300 + "\\\\"  # an escaped quote, brackets, an escaped backslash
    body = json.dumps(dict(case(), name=None))[:-1] + f', "name": "{name}"' + "}"
    outputs = _command([body])
    assert outputs[0]["status"] == "allocated"
    assert outputs[0]["name"] == '"' + "[{" * 300 + "\\"


def test_lines_only_the_standard_library_decodes_still_answer_as_before():
    body = json.dumps(dict(case(), name=None))[:-1]
    outputs = _command([body + ', "name": NaN}', body + ', "name": "\\ud800"}', "{not json"])
    assert outputs[0]["status"] == "allocated" and outputs[0]["name"] != outputs[0]["name"]
    assert outputs[1]["status"] == "allocated" and outputs[1]["name"] == "\ud800"
    assert outputs[2] == {
        "name": None,
        "status": "error",
        "error": "invalid JSON: Expecting property name enclosed in double quotes: line 1 "
        "column 2 (char 1)",
    }
