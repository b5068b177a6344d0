"""Two-variable comprehensions (cel-go's ext.TwoVarComprehensions, in Kubernetes since 1.32) and
the one-variable ``existsOne`` upstream refuses, as DRA selectors see them."""

import random

import pytest

from dra.cel import CelCompileError, CelRuntimeError, compile_selector, device_input
from dra.model import Device, DeviceCapacity
from dra.quantity import parse_quantity

GPU = device_input(
    Device(
        name="gpu-0",
        attributes={
            "index": ("int", 3),
            "model": ("string", "H100"),
            "driverVersion": ("version", "580.126.20"),
            "other.example.com/zone": ("string", "a"),
        },
        capacity={"memory": DeviceCapacity(parse_quantity("80Gi"), None)},
    ),
    "gpu.nvidia.com",
    expose_multiple_allocations=True,
)
A = 'device.attributes["gpu.nvidia.com"]'


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # all / exists / existsOne over a list: index and element
        ("[1, 2].all(i, v, v > i)", True),
        ("[1, 1].all(i, v, v > i)", False),
        ("[].all(i, v, false)", True),
        ("[5, 6].exists(i, v, i == 1 && v == 6)", True),
        ("[5, 6].exists(i, v, i == v)", False),
        ("[1, 2, 3].existsOne(i, v, v > 2)", True),
        ("[1, 2, 3].existsOne(i, v, v > 1)", False),
        ("[1, 2, 3].exists_one(i, v, i == 0)", True),
        # ... and over a map: key and value
        ('{"a": 1, "b": 2}.all(k, v, v > 0 && k != "")', True),
        ('{"a": 1, "b": 2}.exists(k, v, k == "b" && v == 2)', True),
        ('{"a": 1, "b": 2}.existsOne(k, v, v >= 1)', False),
        # the one-variable form is spelt exists_one (cel-go's standard macro)
        ("[1, 2, 3].exists_one(x, x == 2)", True),
        ('{"a": 1}.exists_one(k, k == "a")', True),
        # errors are absorbed where another element decides, as in cel-go's all/exists
        ("[0, 1].all(i, v, 1 / v > 5)", False),
        ("[0, 1].exists(i, v, 1 / v == 1)", True),
        # transformList: with and without a filter, over lists and maps
        ("[1, 2].transformList(i, v, v * 10 + i) == [10, 21]", True),
        ("[1, 2, 3].transformList(i, v, v % 2 == 1, v * i) == [0, 6]", True),
        ('{"a": 1}.transformList(k, v, k + string(v)) == ["a1"]', True),
        ('{"a": 1, "b": 2}.transformList(k, v, v > 1, k) == ["b"]', True),
        # transformMap: over a list the keys are the indices (map<int, V>)
        ("[5, 6].transformMap(i, v, v + 1) == {0: 6, 1: 7}", True),
        ("[5, 6].transformMap(i, v, i > 0, v) == {1: 6}", True),
        ('{"a": 1, "b": 2}.transformMap(k, v, v * 2) == {"a": 2, "b": 4}', True),
        ('{"a": 1, "b": 2}.transformMap(k, v, k == "a", [v]) == {"a": [1]}', True),
        ("[].transformMap(i, v, v) == {}", True),
        # transformMapEntry: the transform gives one entry (or several) per element
        ('{"a": 1}.transformMapEntry(k, v, {v: k}) == {1: "a"}', True),
        ('[1, 2].transformMapEntry(i, v, {string(v): i, "n" + string(v): v}).size() == 4', True),
        ('{"a": 1, "b": 2}.transformMapEntry(k, v, v > 1, {v: k}) == {2: "b"}', True),
        # chained (a comprehension as the range of another) and nested
        ("[1, 2, 3].transformList(i, v, i > 0, v).transformMap(i, v, v) == {0: 2, 1: 3}", True),
        ('{"a": 1}.transformMap(k, v, v).transformList(k, v, k).existsOne(i, v, v == "a")', True),
        ("lists.range(3).transformList(i, v, v * 2).max() == 4", True),
        # nested, and reading the device through both variables
        ("[[1, 2]].transformList(i, v, v.transformMap(j, w, w + j)) == [{0: 1, 1: 3}]", True),
        (f'{A}.exists(k, v, k == "index" && v == 3)', True),
        (f'{A}.all(k, v, k != "zone")', True),
        ('device.attributes.exists(d, m, d == "other.example.com" && m.zone == "a")', True),
        ('device.capacity.all(d, m, m.all(k, q, q.isGreaterThan(quantity("1Gi"))))', True),
        (f'{A}.transformList(k, v, k == "model", v) == ["H100"]', True),
        (f"cel.bind(a, {A}, [1].all(i, a, a == 1))", True),
        (f"cel.bind(a, {A}, [1].transformList(i, a, a > 0, a) == [1])", True),
    ],
)
def test_it_evaluates_two_variable_comprehensions_like_cel_go(expression, expected):
    assert compile_selector(expression).matches(GPU) is expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("[0, 1].all(i, v, 1 / v > 0)", "division by zero"),
        ("[1, 0].transformList(i, v, 10 / v) == []", "division by zero"),
        ("[1, 0].transformList(i, v, 10 / v > 1, v) == []", "division by zero"),
        ("[1, 0].transformMap(i, v, 10 / v).size() == 2", "division by zero"),
        ('[1, 2].transformMapEntry(i, v, {"x": v}).size() == 1', "insert failed: key x already"),
        ("[1, 1].transformMapEntry(i, v, {v: i}).size() == 1", "insert failed: key 1 already"),
        (f"{A}.all(k, v, v > 0)", "no such overload"),
        # a known difference: cel-expr-python cannot return these inside a built map
        ('[duration("1s")].transformMap(i, v, v).size() == 1', "durations or timestamps"),
    ],
)
def test_it_reports_their_runtime_errors(expression, message):
    with pytest.raises(CelRuntimeError, match=message):
        compile_selector(expression).matches(GPU)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("[1].all(i, i, true)", r"<input>:1:12: duplicate variable name: i"),
        ("[1].transformMap(k, k, true, 1) == {}", r"<input>:1:21: duplicate variable name: k"),
        ("[1].all(i, 1, true)", r"<input>:1:12: argument must be a simple name"),
        ("[1].exists(i.j, v, true)", r"<input>:1:13: argument must be a simple name"),
        ("[1].all(__result__, v, true)", "iteration variable overwrites accumulator variable"),
        ("1.all(i, v, true)", r"<input>:1:1: expression of type 'int' cannot be range"),
        ('"ab".exists(i, v, true)', r"expression of type 'string' cannot be range"),
        ('[1].all(i, v, v + "a" == "b")', r"<input>:1:17: found no matching overload for '_\+_'"),
        ('{"a": 1}.all(k, v, k > 0)', r"<input>:1:22: found no matching overload"),
        ("[1].transformList(i, v, v, v) == [1]", r"<input>:1:25: found no matching overload"),
        ("[1].transformMapEntry(i, v, v).size() == 1", "no matching overload"),
        ("[1].transformMap(i, v, v)", r"must evaluate to bool or the unknown type, not map"),
        ("[1].transformList(i, v)", "undeclared reference"),
        ("[1].existsOne(x, y, z, true)", "undeclared reference"),
        # upstream 1.34.9 and 1.36.3 have no one-variable existsOne (the differential harness)
        ("[1, 2].existsOne(x, x == 1)", r"<input>:1:17: undeclared reference to 'existsOne'"),
        ('{"a": 1}.existsOne(k, k == "a")', r"<input>:1:19: undeclared reference to 'existsOne'"),
        ('[1].all(i, v, v > 0) &&\n  [2].all(i, v, v > "x")', r"<input>:2:19: found no"),
        # the names the rewrite introduces are not the author's
        ("dra_keys([1]).size() == 1", "undeclared reference to 'dra_keys'"),
        ("[1].all(i, v, dra_c1 == [1])", "undeclared reference to 'dra_c1'"),
    ],
)
def test_it_refuses_what_upstream_refuses_at_compile_time(expression, message):
    with pytest.raises(CelCompileError, match=message):
        compile_selector(expression).matches(GPU)


def test_their_result_types_are_upstreams():
    assert compile_selector("[1].transformMap(i, v, v)[0] == 1").matches(GPU)
    with pytest.raises(CelCompileError, match="found no matching overload for '_\\[_\\]'"):
        compile_selector('[1].transformMap(i, v, v)["a"] == 1').matches(GPU)
    with pytest.raises(CelCompileError, match="no matching overload"):
        compile_selector('[1].transformList(i, v, i)[0] == "0"').matches(GPU)


@pytest.mark.parametrize(
    ("expression", "paths"),
    [
        (f"{A}.exists(k, v, v == 3)", [("attrdomain", "gpu.nvidia.com")]),
        ("device.attributes.exists(d, m, m.size() > 0)", [("attrs",)]),
        ("device.capacity.all(d, m, true)", [("caps",)]),
        (
            f"[3].all(i, v, {A}.index == v)",
            [("attr", "gpu.nvidia.com", "index")],
        ),
        (
            f'[1].transformList(i, v, v > 0, {A}.model) == ["H100"]',
            [("attr", "gpu.nvidia.com", "model")],
        ),
        # a variable named like an alias shadows it: nothing is read through it
        ('cel.bind(a, device.attributes, [{"x": 1}].all(i, a, a.x == 1))', []),
        ('cel.bind(a, device.attributes, [{"x": 1}].transformList(i, a, true, a.x) == [1])', []),
        ("[1].all(i, device, device == 1)", []),
    ],
)
def test_reads_are_found_through_the_two_variables(expression, paths):
    selector = compile_selector(expression)
    assert selector.matches(GPU) is True
    assert sorted(selector.reads.paths) == paths


@pytest.mark.parametrize(
    ("one_variable", "two_variable"),
    [
        (
            "lists.range(1001).map(x, x).size() > 0",
            "lists.range(1001).transformList(i, v, v).size() > 0",
        ),
        (
            "lists.range(999).map(x, x).size() > 0",
            "lists.range(999).transformList(i, v, v).size() > 0",
        ),
        ("lists.range(2000).all(x, x >= 0)", "lists.range(2000).all(i, v, v >= i)"),
    ],
)
def test_the_cost_meter_charges_them_like_the_one_variable_forms(one_variable, two_variable):
    def outcome(expression):
        try:
            return compile_selector(expression).matches(GPU)
        except CelRuntimeError as error:
            return str(error)

    assert outcome(one_variable) == outcome(two_variable)


def test_a_nested_two_variable_comprehension_reaches_the_cost_limit():
    expression = "lists.range(2000).all(i, v, lists.range(2000).exists(j, w, w == i + v))"
    with pytest.raises(CelRuntimeError, match="actual cost limit exceeded"):
        compile_selector(expression).matches(GPU)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("optional.unwrap([optional.of(1), optional.none(), optional.of(3)]) == [1, 3]", True),
        ('[optional.of("a"), optional.none()].unwrapOpt() == ["a"]', True),
        ("cel.bind(l, [optional.none(), optional.of(2)], optional.unwrap(l)) == [2]", True),
        ("optional.unwrap([]) == []", True),
        (f'optional.unwrap([{A}.?model, {A}.?missing]) == ["H100"]', True),
    ],
)
def test_the_optional_librarys_unwrap_is_available(expression, expected):
    assert compile_selector(expression).matches(GPU) is expected


@pytest.mark.parametrize("expression", ["optional.unwrap([1]) == [1]", "[1].unwrapOpt() == []"])
def test_unwrap_of_a_list_without_optionals_does_not_compile(expression):
    with pytest.raises(CelCompileError, match="no matching overload"):
        compile_selector(expression).matches(GPU)


def test_random_lists_and_maps_agree_with_the_definition():
    """cel-go's expansions (index/key first, element/value second, filter before transform)
    computed directly in Python, on random inputs."""
    generator = random.Random(12)
    for _ in range(40):
        values = [generator.randint(-3, 3) for _ in range(generator.randint(0, 6))]
        listed = "[" + ", ".join(map(str, values)) + "]"
        mapped = {f"k{index}": value for index, value in enumerate(values)}
        literal = "{" + ", ".join(f'"{k}": {v}' for k, v in mapped.items()) + "}"
        pairs = list(enumerate(values))
        expected = {
            f"{listed}.all(i, v, v >= i - 3)": all(v >= i - 3 for i, v in pairs),
            f"{listed}.exists(i, v, v == i)": any(v == i for i, v in pairs),
            f"{listed}.existsOne(i, v, v > 0)": sum(v > 0 for _, v in pairs) == 1,
            f"{listed}.transformList(i, v, v % 2 == 0, v * i) == "
            + str([v * i for i, v in pairs if v % 2 == 0]): True,
            f"{listed}.transformMap(i, v, v - i) == "
            + ("{" + ", ".join(f"{i}: {v - i}" for i, v in pairs) + "}"): True,
            f'{literal}.exists(k, v, k == "k0" && v < 0)': mapped.get("k0", 0) < 0,
            f"{literal}.transformList(k, v, v > 0, v).size()": None,
        }
        for expression, result in expected.items():
            if result is None:
                expression = f"{expression} == {sum(v > 0 for v in values)}"
                result = True
            assert compile_selector(expression).matches(GPU) is result, expression
