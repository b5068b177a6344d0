"""The compile-time checks cel-go runs after type checking in Kubernetes' environment: format
strings, homogeneous literals, and literal durations, timestamps and regular expressions."""

import pytest

from dra.cel import CelCompileError, compile_selector, device_input
from dra.model import Device

DEVICE = device_input(
    Device(name="d", attributes={"cores": ("int", 3), "model": ("string", "h100")}, capacity={}),
    "gpu.example.com",
    expose_multiple_allocations=True,
)
A = 'device.attributes["gpu.example.com"]'
STRING_CLAUSE = (
    "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, "
    "types, durations, and timestamps, was given "
)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # verbs against the argument's static type, at the argument
        (
            '"%d".format(["x"]) == ""',
            "1:14: error during formatting: decimal clause can only "
            "be used on integers, was given string",
        ),  # fmt: skip
        ('"%f".format([1]) == ""', "fixed-point clause can only be used on doubles, was given int"),
        ('"%.2e".format([true]) == ""', "scientific clause can only be used on doubles, was given"),
        ('"%b".format([1.5]) == ""', "only integers and bools can be formatted as binary, was"),
        ('"%X".format([1.5]) == ""', "only integers, byte buffers, and strings can be formatted"),
        ('"%o".format(["7"]) == ""', "octal clause can only be used on integers, was given string"),
        ('"%s".format([quantity("1")]) == ""', STRING_CLAUSE + "kubernetes.Quantity"),
        ('"%s".format([[1, {"a": quantity("1")}]]) == ""', "1:32: error during formatting: "),
        ('"%s".format([optional.of(1)]) == ""', STRING_CLAUSE + "optional_type"),
        # attribute values are google.protobuf.Any upstream, which %s refuses
        (f'"%s".format([{A}.model]) == ""', STRING_CLAUSE + "google.protobuf.Any"),
        # the clause syntax and the argument count, at the call
        ('"%d %s".format([1]) == ""', "1:15: index 1 out of range"),
        (
            '"%d".format([1, 2]) == ""',
            "1:12: too many arguments supplied to string.format \\(expected 1, got 2\\)",
        ),  # fmt: skip
        ('"%q".format([1]) == ""', 'unrecognized formatting clause "q"'),
        ('"%".format([1]) == ""', "unexpected end of string"),
        ('"%.f".format([1.0]) == ""', "error while converting precision to integer"),
        ('"%.3".format([1.0]) == ""', "could not find end of precision specifier"),
        ('"%s".format([]) == ""', "index 0 out of range"),
    ],
)
def test_format_is_checked_at_compile_time_like_cel_go(expression, message):
    with pytest.raises(CelCompileError, match=message):
        compile_selector(expression).matches(DEVICE)


@pytest.mark.parametrize(
    "expression",
    [
        '"%d and %s".format([1, "x"]) == "1 and x"',
        '"%s".format([dyn(1)]) == "1"',  # dyn passes every clause
        '"%s".format([[1, "a"]]).size() > 0',  # literals inside format need not be homogeneous
        '"%.2f %x %o %b %e".format([1.5, "hi", 8, true, 2.0]).size() > 0',
        '"100%%".format([]) == "100%"',
        f'"%s".format([dyn({A}.model)]) == "h100"',
        f'cel.bind(m, {A}.model, "%s".format([m])) == "h100"',  # through a binding: dyn here
        '"%d".format(dyn(["x"])) == ""',  # not a list literal: checked when evaluated
    ],
)
def test_valid_or_unchecked_format_calls_compile(expression):
    assert compile_selector(expression).error is None


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ('[1, "a"].size() == 2', "1:5: expected type 'int' but found 'string'"),
        ("[1, 1.5].size() == 2", "expected type 'int' but found 'double'"),
        ("[[1], [true]].size() == 2", "expected type 'list\\(int\\)' but found 'list\\(bool\\)'"),
        ('{"a": 1, "b": "x"}.size() == 2', "1:15: expected type 'int' but found 'string'"),
        ('{"a": 1, 2: 1}.size() == 2', "1:10: expected type 'string' but found 'int'"),
        ("[1, dyn(2)].size() == 2", "expected type 'int' but found 'dyn'"),
        (f"[{A}.cores, 5].min() == 3", "expected type 'google.protobuf.Any' but found 'int'"),
        (
            '[quantity("1"), {"a": "b"}].size() == 2',
            "expected type 'kubernetes.Quantity' but found 'map\\(string, string\\)'",
        ),
        ('duration("bogus") == duration("1s")', "1:10: invalid duration argument"),
        ('duration("1d") > duration("1s")', "invalid duration argument"),
        (
            'timestamp("2020-13-01T00:00:00Z") > timestamp("2020-01-01T00:00:00Z")',
            "invalid timestamp",
        ),
        ('timestamp("2020-01-01") > timestamp("2020-01-01T00:00:00Z")', "invalid timestamp"),
        ('timestamp("0001-01-01T00:00:00+01:00") < timestamp(0)', "invalid timestamp argument"),
        ("timestamp(253402300800) > timestamp(0)", "invalid timestamp argument"),
        ('"a".matches("[")', "1:13: invalid matches argument"),
        ('matches("(", "a")', "1:9: invalid matches argument"),
        ('1 < 1.5 && [1, "a"].size() == 2', "1:16: expected type 'int' but found 'string'"),
        ("[1].all(i, v, [v, 'a'].size() == 2)", "1:19: expected type 'int' but found 'string'"),
    ],
)
def test_literals_are_checked_like_cel_go(expression, message):
    with pytest.raises(CelCompileError, match=message):
        compile_selector(expression).matches(DEVICE)


@pytest.mark.parametrize(
    "expression",
    [
        "[[], [1]].size() == 2",
        "[?optional.of(1), 2].size() == 2",
        "[dyn(1), dyn('a')].size() == 2",
        f"[{A}.cores, {A}.model].size() == 2",
        '{"a": [1], "b": []}.size() == 2',
        'duration("1h30m") > duration("1.5s") && duration("-2us") < duration("0")',
        'timestamp("2020-01-01T10:00:00.5+02:00") < timestamp("2020-01-02T00:00:00Z")',
        'timestamp(1) > timestamp("0001-01-01T00:00:00Z")',
        '"a".matches("^[a-z]+$")',
        'matches("a", "a")',
    ],
)
def test_valid_literals_compile(expression):
    selector = compile_selector(expression)
    assert selector.error is None
    assert selector.matches(DEVICE) is True
