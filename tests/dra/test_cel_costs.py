"""The runtime cost of selectors is cel-go's actual cost, as Kubernetes configures it for DRA:
exact values (upstream's own cost tests, and hand-derived ones), expressions just under and just
over the limit of 1,000,000, and runaway selectors answering the cost error at once."""

import math
import time

import pytest

from dra.cel import CelRuntimeError, clear_caches, compile_selector, device_input
from dra.cel.costs import cost_spent, reset_cost, settle
from dra.cel.environment import EVALUATION_ENVIRONMENT, quantity_literal, semver_literal
from dra.cel.reads import analyze
from dra.model import Device

COST_ERROR = "operation cancelled: actual cost limit exceeded"
DEVICE = Device(name="d", attributes={"model": ("string", "h100")}, capacity={})


def _actual_cost(expression, optimized):
    """The cost the meter charges for one evaluation of an expression without variables."""
    reads = analyze(
        expression,
        quantity_literal,
        semver_literal,
        optimized=optimized,
        always_metered=True,
    )
    exact = bool(reads.exact_text)
    program = EVALUATION_ENVIRONMENT.compile(reads.exact_text if exact else reads.evaluated_text)
    reset_cost()
    program.eval(data={})
    settle(reads.exact_root_cost if exact else reads.root_cost)
    return cost_spent()


def _evaluate(expression):
    clear_caches()
    return compile_selector(expression).matches(device_input(DEVICE, "gpu.example.com", True))


# cel-go's interpreter/runtimecost_test.go (TestRuntimeCost) and Kubernetes'
# apiserver/pkg/cel/library/cost_test.go: both evaluate without cel.OptOptimize.
UPSTREAM_TEST_COSTS = [
    ('"Hello World!"', 0),
    ("[1, 2, 3]", 10),
    ('{"a": 1, "b": 2, "c": 3}', 30),
    ("[1, 2, 3].all(x, true)", 20),
    ("false || false", 0),
    ("true || false", 0),
    ("true && false", 0),
    ("1 < 2", 1),
    ("2 in [1, 2, 3]", 13),
    ("1 + 1", 1),
    ("1 % 1", 1),
    ("true ? 1 : 2", 0),
    ('size("123")', 1),
    ("'12345678901234567890' == '123456789012345678901234567890'", 2),
    ("string(1)", 1),
    ("'123'.matches('[0-9]')", 2),
    ("false ? false : 1 > 3", 1),
    ("(1 > 2 ? 5 : 3) > 1", 2),
    ("(1 > 2 || 2 > 1) == true", 3),
    ("[{'k1': 1}, {'k2': 2}].all(x, true)", 77),
    ("[1,2,3,4,5].filter(x, x % 2 == 0)", 62),
    ("[1,2,3,4,5].map(x, x)", 86),
    ("[1,2,3,4,5].map(x, x).filter(x, x % 2 == 0)", 138),
    ("[1,2,3,4,5].map(x, x).exists(x, x == 5) == true", 118),
    ("[1,2,3,4,5].map(x, x).map(x, x)", 162),
    ("[1,2,3,4,5].map(x, [x, x]).filter(z, z.size() == 2)", 232),
    ("[1,2,3,4,5].map(x, [x, x]).all(y, y.all(y, y == 1))", 171),
    ("[1,2,3,4,5].map(x, x).map(x, x) + [1]", 173),
    ("[1,2,3].all(i, i in [1,2,3].map(j, j + j))", 86),  # all() pays its condition on stopping
    ("[1, 2, 3, 4, 5].sum()", 15),
    ("[uint(1), uint(2), uint(3), uint(4), uint(5)].sum()", 20),
    ("[1.0, 2.0, 3.0, 4.0, 5.0].max()", 15),
    ("['012345678901', '012345678901', '012345678901', '012345678901', '012345678901'].min()", 15),
    (
        "[bytes('012345678901'), bytes('012345678901'), bytes('012345678901'), "
        "bytes('012345678901'), bytes('012345678901')].isSorted()",
        25,
    ),
    ("[duration('1s'), duration('2s'), duration('3s'), duration('4s'), duration('5s')].min()", 20),
    ("[1, 2, 3, 4, 5].indexOf(3)", 15),
    ("[1.0, 2.0, 3.0, 4.0, 5.0].lastIndexOf(3.0)", 15),
    ("'01234567890123456789012345678901234567890123456789'.indexOf('123')", 5),
    ("!sets.contains([1], [2])", 23),
    ("!sets.contains([1], [1, 2])", 24),
    ("sets.equivalent([], [])", 21),
    ("sets.equivalent([1, 2, 3], [3u, 2.0, 1])", 39),
    ("sets.equivalent([[1.0], [2, 3]], [[1], [2, 3.0]])", 69),
    ("sets.intersects([[1], [2, 3]], [[1, 2], [2, 3.0]])", 65),
    ("!sets.intersects([1], [1.1, 2u])", 24),
]


@pytest.mark.parametrize(("expression", "cost"), UPSTREAM_TEST_COSTS)
def test_it_charges_the_actual_cost_of_upstreams_cost_tests(expression, cost):
    assert _actual_cost(expression, optimized=False) == cost


# Derived from cel-go's code for the environment DRA evaluates in (cel.OptOptimize: constant
# lists, maps and conversions are folded, `in` a constant list is a set lookup).
OPTIMIZED_COSTS = [
    ("[1, 2, 3].all(x, true)", 10),
    ("2 in [1, 2, 3]", 0),
    ("2 in []", 0),  # folded to false
    ("[2] in [[1], [2]]", 2),  # lists are not hashed: a call costing the list's size
    ("[1,2,3,4,5].map(x, x)", 66),  # the accumulator's [] is a constant too
    ("[1,2,3,4,5].map(x, 1)", 11),  # and so is [1] in its step
    ("[1,2,3,4,5].filter(x, x % 2 == 0)", 42),
    ("[1, 2, 3].exists_one(x, x > 1)", 12),  # 3 × (x > 1) + 2 × 2 when true + 2
    ("[1, 2, 3].exists(x, x == 1)", 10),  # stops at once: 4 + 2, the condition again: 3, 1
    ("[1, 2, 3].map(x, x > 1, x * 2)", 35),  # 3 × 2 + 2 × (12 + 2) + 1
    ('cel.bind(s, "abc", s + s == "abcabc")', 4),
    ("lists.range(5).size()", 17),  # range: 5 + 1 + 10
    ("lists.range(3).reverse().sort()", 14 + 14 + 29),
    ("[[1, 2], [3]].flatten()", 13),  # flatten charges the outer size
    ('["a", "b", "c"].join("-")', 1),  # ceil(5 × 2 × 0.1)
    ('"a-b-c".split("-")', 1),
    ('"aaaaaaaaaaaaaaa" + "aaaaaaaaaaaaaaaa"', 4),  # ceil(31 × 0.1)
    ('"abc".startsWith("a") && "abc".endsWith("c")', 2),
    ('"abc".contains("b")', 1),
    ('"0123456789abcdefghij".find("[a-z]+")', 3 * 2),  # ceil(2.1) × ceil(6 × 0.25)
    ('quantity("40Gi").compareTo(quantity("1Gi")) >= 0', 4),
    ('semver("1.2.3").isGreaterThan(semver("1.0.0"))', 3),
    ('"%s-%s".format(["a", "b"])', 1),
]


@pytest.mark.parametrize(("expression", "cost"), OPTIMIZED_COSTS)
def test_it_charges_the_actual_cost_with_constants_folded_as_in_kubernetes(expression, cost):
    assert _actual_cost(expression, optimized=True) == cost


@pytest.mark.parametrize(
    ("expression", "optimized"),
    [(expression, False) for expression, _ in UPSTREAM_TEST_COSTS]
    + [(expression, True) for expression, _ in OPTIMIZED_COSTS],
)
def test_the_upper_bound_evaluated_first_is_never_below_the_exact_cost(expression, optimized):
    # Only a bound past the limit re-runs the exact meter, so the bound must never be lower.
    reads = analyze(
        expression, quantity_literal, semver_literal, optimized=optimized, always_metered=True
    )
    program = EVALUATION_ENVIRONMENT.compile(reads.evaluated_text)
    reset_cost()
    program.eval(data={})
    settle(reads.root_cost)
    assert cost_spent() >= _actual_cost(expression, optimized)


def test_a_metered_selector_pays_for_what_it_reads_from_the_device():
    # device 1, attributes 1, ["gpu.example.com"] 1, model 1; contains: ceil(0.4) × ceil(0.2)
    assert _evaluate('device.attributes["gpu.example.com"].model.contains("h1")') is True
    assert cost_spent() == 5
    # PresenceTestHasCost(false): has() pays for the attribute, not for the field it tests
    assert _evaluate('has(device.attributes["gpu.example.com"].model) && "ab".contains("b")')
    assert cost_spent() == 3 + 1


def test_common_selectors_are_not_rewritten_for_the_meter():
    # Their cost is linear in the device's values and cannot come near the limit.
    reads = analyze(
        'device.driver == "x" && device.attributes["x"].model == "y" && '
        'device.capacity["x"].memory.compareTo(quantity("40Gi")) >= 0',
        quantity_literal,
        semver_literal,
    )
    assert "dra_cost" not in reads.evaluated_text


def _doubling(length, times=10):
    """A string of ``length`` characters added to itself ``times`` times over."""
    text = f"cel.bind(v{times}, v{times - 1} + v{times - 1}, v{times}.size() > 0)"
    for index in range(times - 1, 0, -1):
        text = f"cel.bind(v{index}, v{index - 1} + v{index - 1}, {text})"
    return f'cel.bind(v0, "{"x" * length}", {text})'


def _doubling_cost(length, times=10):
    # cel-go: a + b costs ceil((|a| + |b|) × 0.1) in float64; each identifier 1; size() and > 1
    return sum(math.ceil(length * 2**step * 0.1) for step in range(1, times + 1)) + 2 * times + 3


@pytest.mark.parametrize(
    ("expression", "cost"),
    [
        # lists.range(n): n + 11; size(): 1; > 0: 1
        ("lists.range(999987).size() > 0", 1_000_000),
        # per outer element: 3 (all) + M + 11 (range) + 1 (size) + 1 (>); range 111; result 1
        ("lists.range(100).all(i, lists.range(9982).size() > 0)", 999_912),
        # per element: 12 (map's step) + M + 11 + 1; range 111; result, size, > : 3
        ("lists.range(100).map(i, lists.range(9974).size()).size() > 0", 999_914),
        (_doubling(4887), 999_908),
    ],
)
def test_expressions_just_under_the_limit_evaluate(expression, cost):
    assert _evaluate(expression) is True
    assert cost_spent() == cost


@pytest.mark.parametrize(
    "expression",
    [
        "lists.range(999988).size() > 0",
        "lists.range(100).all(i, lists.range(9983).size() > 0)",
        "lists.range(100).map(i, lists.range(9975).size()).size() > 0",
        _doubling(4888),
        '"aaaaaaaaaa"' + '.replace("a", "aaaaaaaaaa")' * 7 + ".size() > 0",
    ],
)
def test_expressions_just_over_the_limit_fail_with_the_cost_error(expression):
    with pytest.raises(CelRuntimeError, match=COST_ERROR):
        _evaluate(expression)


def test_a_loop_that_stops_early_is_charged_for_the_elements_it_ran():
    # The upper bound (every element) passes the limit; the exact meter decides, as upstream:
    # range 999,911; 14 elements × (condition 3 + step 1 + x == 13: 2); the condition once
    # more; the result 1
    assert _evaluate("lists.range(999900).exists(x, x == 13)") is True
    assert cost_spent() == 999_999
    with pytest.raises(CelRuntimeError, match=COST_ERROR):
        _evaluate("lists.range(999900).exists(x, x == 14)")


def test_string_doubling_costs_its_sizes_as_go_rounds_them():
    assert _doubling_cost(4887) == 999_908
    assert _doubling_cost(4888) > 1_000_000


def test_chained_replace_is_charged_twice_its_input_per_call():
    # ceil(10^k × 2 × 0.1) for k = 1..6, then size() and >
    expression = '"aaaaaaaaaa"' + '.replace("a", "aaaaaaaaaa")' * 6 + ".size() > 0"
    assert _evaluate(expression) is True
    assert cost_spent() == 222_222 + 2


@pytest.mark.parametrize(
    "expression",
    [
        "lists.range(100000000).size() > 0",
        "lists.range(5000).map(x, lists.range(5000)).size() > 0",
        '"a"' + '.replace("a", "aaaaaaaaaa")' * 8 + ".size() > 0",
        # replace() multiplies its input by the replacement's length: 3 → 9,000 → 27,000,000
        '"zzz"' + ('.replace("z", "' + "z" * 3000 + '")') * 3 + ".size() > 0",
        "sets.contains(lists.range(20000), lists.range(20000))",
        "lists.range(200).all(x, lists.range(200).all(y, x + y >= 0))",
        # past cel-cpp's iteration budget a loop that cannot stop early fails before it starts
        "lists.range(100000).map(x, x).size() > 0",
        "lists.range(100000).filter(x, true).size() > 0",
    ],
)
def test_attacks_answer_the_cost_error_at_once(expression):
    started = time.monotonic()
    with pytest.raises(CelRuntimeError, match=COST_ERROR):
        _evaluate(expression)
    # a runaway guard, not a benchmark: these ran 10–50 s before the meter, milliseconds now
    assert time.monotonic() - started < 10.0


SEMANTICS = [
    "[1, 2, 3].all(i, i in [1, 2, 3].map(j, j + j) || i > 0)",
    "[1, 2, 3].exists(i, i > 1 ? i + 1 > 3 : [i].all(k, k == 1))",
    '["a", "bb"].map(s, s + s).filter(s, s.size() > 2 && s.startsWith("b")) == ["bbbb"]',
    "cel.bind(l, lists.range(4), l.exists_one(x, x == 2) && l.map(x, x > 1, x * 2) == [4, 6])",
    '{"a": 1, "b": 2}.all(k, k in ["a", "b"] && {"a": 1, "b": 2}[k] > 0)',
    '"abc".replace("b", "x" + "y").contains("xy") ? "a" < "b" : false',
    "sets.contains(lists.range(3).map(x, x * 2), [2]) && !sets.intersects([1], [2])",
    '[[1, 2], [3]].flatten().sort().reverse() == [3, 2, 1] && "a,b".split(",").join("-") == "a-b"',
    '(true ? "ab" : "c") + "d" == "abd" && (false ? [1] : [2, 3]).size() == 2',
    "lists.range(3).all(i, lists.range(3).exists(j, i == j)) && [1, 2].exists(x, x == 1)",
    '"%s".format(["x"]) == "x" && strings.quote("a") != "b" && b"a" + b"b" == b"ab"',
    "[1, 2, 3].filter(x, x != 2).map(x, [x]).flatten() == [1, 3]",
]


@pytest.mark.parametrize("expression", SEMANTICS)
def test_the_metered_rewrites_keep_the_value(expression):
    reads = analyze(expression, quantity_literal, semver_literal, always_metered=True)
    for text in (expression, reads.evaluated_text, reads.exact_text):
        if text:
            reset_cost()
            assert EVALUATION_ENVIRONMENT.compile(text).eval(data={}).value() is True, text
