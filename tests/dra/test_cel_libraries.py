"""Kubernetes' CEL libraries that cel-expr-python lacks, with upstream's semantics: each table
gives values, runtime errors and compile errors (functions upstream does not have included)."""

import pytest

from dra.cel import CelCompileError, CelRuntimeError, compile_selector, device_input
from dra.model import Device

DEVICE = device_input(
    Device(name="d", attributes={"cores": ("int", 3), "model": ("string", "h100")}, capacity={}),
    "gpu.example.com",
    True,
)
A = 'device.attributes["gpu.example.com"]'


def _evaluate(expression):
    return compile_selector(expression).matches(DEVICE)


LIST_VALUES = [
    "[1, 2, 3].isSorted()",
    '["a", "b", "b", "c"].isSorted()',
    "![2.0, 1.0].isSorted()",
    "[].isSorted() && [1].isSorted()",
    "![true, false].isSorted()",
    '[duration("1s"), duration("2s")].isSorted()',
    "[1, 3].sum() == 4",
    "[1.0, 3.0].sum() == 4.0",
    "[1u, 2u].sum() + 1u == 4u",  # the uint type survives
    '[duration("1m"), duration("1s")].sum() == duration("61s")',
    "[1].filter(x, x > 5).sum() == 0",
    "[1, 3].min() == 1 && [1, 3].max() == 3",
    "[3u, 1u].max() + 1u == 4u",
    '[b"b", b"a"].min() == b"a" && ["b", "a"].max() == "b"',
    '[duration("2s"), duration("1s")].max() == duration("2s")',
    '[timestamp("2020-01-01T00:00:00Z"), timestamp("2019-01-01T00:00:00Z")].min()'
    ' == timestamp("2019-01-01T00:00:00Z")',
    "[[3, 1].min(), 2].max() == 2",
    "lists.range(10).map(x, x * 2).max() == 18",
    # cel-go's lists.range counts up to its size: none for a negative one (cel-cpp's failed)
    "lists.range(-1) == [] && lists.range(0) == [] && lists.range(-5).size() == 0",
    "cel.bind(r, lists.range(-2), r.all(x, false)) && lists . range(2) == [0, 1]",
    "lists.range(3).all(i, v, i == v) && [1].all(lists, lists > 0)",
    "cel.bind(lists, 5, lists.range(-2) == [])",  # a namespaced function is not shadowed
    f"[{A}.cores, {A}.cores].min() == 3",  # [{A}.cores, 5] mixes any and int: no compile
    "[1, 2, 2, 3].indexOf(2) == 1 && [1, 2, 2, 3].lastIndexOf(2) == 2",
    '["a", "b", "b", "c"].lastIndexOf("b") == 2',
    "[1.0].indexOf(1.1) == -1 && [].indexOf(1) == -1",
    "[[1], [2]].indexOf([2]) == 1",
    "[1, 2].indexOf(dyn(1.0)) == 0",  # CEL's numeric equality
    # the strings extension's indexOf/lastIndexOf are unchanged
    '"abcb".indexOf("b") == 1 && "abcb".lastIndexOf("b") == 3 && "abcb".indexOf("b", 2) == 3',
    '"abcb".lastIndexOf("b", 2) == 1 && "ab".indexOf("") == 0 && "ab".lastIndexOf("") == 2',
    f'{A}.model.indexOf("1") == 1',
]


@pytest.mark.parametrize("expression", LIST_VALUES)
def test_the_lists_library_evaluates_like_kubernetes(expression):
    assert _evaluate(expression) is True


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("[1].filter(x, x > 5).min() == 0", "min called on empty list"),
        ("[1].filter(x, x > 5).max() == 0", "max called on empty list"),
        ("[9223372036854775807, 1].sum() == 0", "integer overflow"),
        ("[18446744073709551615u, 1u].sum() == 0u", "unsigned integer overflow"),
        ('"abc".indexOf("b", -1) == 1', "index out of range: -1"),
        # each pass over the list is charged: 400,000 (range) + 400,000 (sum) + 400,000 (max)
        ("cel.bind(l, lists.range(400000), l.sum() + l.max() > 0)", "cost limit"),
    ],
)
def test_the_lists_library_reports_runtime_errors(expression, message):
    with pytest.raises(CelRuntimeError, match=message):
        _evaluate(expression)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ('["a"].sum() == "a"', "no matching overload for 'sum'"),
        ("[[1]].min() == [1]", "no matching overload for 'min'"),
        ("[[1]].isSorted()", "no matching overload for 'isSorted'"),
        ('[1, 2].indexOf("a") == -1', "no matching overload for 'indexOf'"),
        ("[1, 2].median() == 1", "undeclared reference to 'median'"),
        ("dra_idx([1], 1) == 0", "undeclared reference to 'dra_idx'"),
        ("[1].dra_lastidx(1) == 0", "undeclared reference to 'dra_lastidx'"),
        ("dra_list_min([1]) == 0", "undeclared reference"),
    ],
)
def test_the_lists_library_reports_compile_errors(expression, message):
    with pytest.raises(CelCompileError, match=message):
        _evaluate(expression)
