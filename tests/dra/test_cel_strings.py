"""The strings extension's index functions as cel-go answers them (Kubernetes 1.34.9 and 1.36.3
both vendor cel-go v0.26.0): values and errors from cel-go's own ``ext/strings_test.go`` of that
release, plus the corners around them. ``charAt``/``substring`` run as ``dra.cel.strings``
(cel-cpp fails the same calls with other words); ``indexOf``/``lastIndexOf`` as
``dra.cel.lists`` (an offset at or past the end finds nothing; only a negative one fails)."""

import pytest

from dra.cel import CelCompileError, CelRuntimeError, compile_selector, device_input
from dra.model import Device

DEVICE = device_input(
    Device(
        name="d",
        attributes={"model": ("string", "tacocat"), "empty": ("string", "")},
        capacity={},
    ),
    "gpu.example.com",
    True,
)
A = 'device.attributes["gpu.example.com"]'


def _evaluate(expression: str) -> bool:
    return compile_selector(expression).matches(DEVICE)


VALUES = [
    # cel-go ext/strings_test.go (v0.26.0)
    "'tacocat'.charAt(3) == 'o'",
    "'tacocat'.charAt(7) == ''",
    "'©αT'.charAt(0) == '©' && '©αT'.charAt(1) == 'α' && '©αT'.charAt(2) == 'T'",
    "'tacocat'.indexOf('') == 0",
    "'tacocat'.indexOf('ac') == 1",
    "'tacocat'.indexOf('none') == -1",
    "'tacocat'.indexOf('', 3) == 3",
    "'tacocat'.indexOf('a', 3) == 5",
    "'tacocat'.indexOf('at', 3) == 5",
    "'ta©o©αT'.indexOf('©') == 2",
    "'ta©o©αT'.indexOf('©', 3) == 4",
    "'ta©o©αT'.indexOf('©αT', 3) == 4",
    "'ta©o©αT'.indexOf('©α', 5) == -1",
    "'ijk'.indexOf('k') == 2",
    "'hello wello'.indexOf('hello wello') == 0",
    "'hello wello'.indexOf('ello', 6) == 7",
    "'hello wello'.indexOf('elbo room!!') == -1",
    "'hello wello'.indexOf('elbo room!!!') == -1",
    "''.lastIndexOf('@@') == -1",
    "'tacocat'.lastIndexOf('') == 7",
    "'tacocat'.lastIndexOf('at') == 5",
    "'tacocat'.lastIndexOf('none') == -1",
    "'tacocat'.lastIndexOf('', 3) == 3",
    "'tacocat'.lastIndexOf('a', 3) == 1",
    "'ta©o©αT'.lastIndexOf('©') == 4",
    "'ta©o©αT'.lastIndexOf('©', 3) == 2",
    "'ta©o©αT'.lastIndexOf('©α', 4) == 4",
    "'hello wello'.lastIndexOf('ello', 6) == 1",
    "'hello wello'.lastIndexOf('low') == -1",
    "'hello wello'.lastIndexOf('elbo room!!') == -1",
    "'hello wello'.lastIndexOf('elbo room!!!') == -1",
    "'hello wello'.lastIndexOf('hello wello') == 0",
    "'bananananana'.lastIndexOf('nana', 7) == 6",
    "'tacocat'.indexOf('a', 30) == -1",
    "'tacocat'.lastIndexOf('a', 30) == -1",
    '"tacocat".substring(4) == "cat"',
    '"tacocat".substring(7) == ""',
    '"tacocat".substring(0, 4) == "taco"',
    '"tacocat".substring(4, 4) == ""',
    "'ta©o©αT'.substring(2, 6) == \"©o©α\"",
    "'ta©o©αT'.substring(7, 7) == \"\"",
    # around them: an empty text finds nothing (it used to be an error here), an empty part
    # is found at any offset, device values behave as literals
    "''.indexOf('a') == -1 && ''.lastIndexOf('a') == -1",
    "'abc'.indexOf('a', 3) == -1 && 'abc'.lastIndexOf('c', 3) == -1",
    "'tacocat'.indexOf('', 30) == 30 && 'tacocat'.lastIndexOf('', 30) == 30",
    "''.lastIndexOf('') == 0 && ''.charAt(0) == '' && ''.substring(0) == ''",
    "'a'.lastIndexOf('é') == -1",
    f"{A}.model.indexOf('cat') == 4 && {A}.model.charAt(0) == 't'",
    f"{A}.empty.indexOf('x') == -1 && {A}.model.substring(2, 4) == 'co'",
]


@pytest.mark.parametrize("expression", VALUES)
def test_the_strings_index_functions_answer_as_cel_go(expression: str) -> None:
    assert _evaluate(expression) is True


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # cel-go ext/strings_test.go: its error cases, word for word
        ("'tacocat'.charAt(30) == ''", "index out of range: 30"),
        ("'tacocat'.lastIndexOf('a', -1) == -1", "index out of range: -1"),
        ('"tacocat".substring(40) == "cat"', "index out of range: 40"),
        ('"tacocat".substring(-1) == "cat"', "index out of range: -1"),
        ('"tacocat".substring(1, 50) == "cat"', "index out of range: 50"),
        ('"tacocat".substring(49, 50) == "cat"', "index out of range: 49"),
        ('"tacocat".substring(4, 3) == ""', "invalid substring range. start: 4, end: 3"),
        # the same checks in cel-go's order elsewhere
        ("'tacocat'.charAt(-1) == ''", "index out of range: -1"),
        ("'tacocat'.indexOf('a', -2) == -1", "index out of range: -2"),
        ('"tacocat".substring(-1, 2) == ""', "index out of range: -1"),
        ('"tacocat".substring(-3, -1) == ""', "index out of range: -3"),
        (f"{A}.model.substring(8) == ''", "index out of range: 8"),
    ],
)
def test_the_strings_index_functions_fail_as_cel_go(expression: str, message: str) -> None:
    with pytest.raises(CelRuntimeError) as raised:
        _evaluate(expression)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ('"a".charAt("x") == ""', "found no matching overload for 'charAt'"),
        (
            '1.substring(1) == ""',
            "found no matching overload for 'substring' applied to 'int.(int)'",
        ),
        ('dra_at("a", 0) == ""', "undeclared reference to 'dra_at'"),
        ('"a".dra_subst(0) == ""', "undeclared reference to 'dra_subst'"),
    ],
)
def test_the_renamed_functions_keep_their_names_in_compile_errors(
    expression: str, message: str
) -> None:
    with pytest.raises(CelCompileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _evaluate(expression)
