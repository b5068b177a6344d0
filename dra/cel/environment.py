"""The Kubernetes CEL environment of DRA selectors on cel-expr-python: quantity and semver
values with Kubernetes' semantics, their functions, regex helpers, and the declared variables.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import Any

import re2  # type: ignore[import-untyped]  # RE2: Go's regexp semantics, linear time
from cel_expr_python import cel

from dra.cel import network
from dra.cel.call_costs import call_cost
from dra.cel.costs import charge
from dra.cel.errors import CelRuntimeError
from dra.cel.libraries import (
    INDEX_DECLARATIONS,
    comprehension_functions,
    internal_functions,
    list_functions,
    network_functions,
    string_functions,
)
from dra.quantity import Quantity, QuantityError, Stored, parse_quantity
from dra.semver import Semver, SemverError, parse_semver

MAX_EXPRESSION_LENGTH = 10 * 1024
_RESULT_CACHE_LIMIT = 500_000
_QUANTITY_KEY = "kubernetes.Quantity"
_SEMVER_KEY = 0


# --- values ------------------------------------------------------------------------------------


def quantity_value(quantity: Quantity) -> dict[str, str]:
    """A quantity as CEL carries it: its exact value and how Go holds it
    (``"1610612736|d1610612736000000000e-9"``), which ``isInteger`` and friends read. Two
    quantities of one value may be held differently (``2`` and ``2.0``), so ``==`` on
    quantities is rewritten to compare values (:func:`quantity_equal`)."""
    value = quantity.value
    text = (
        str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    )
    return {_QUANTITY_KEY: f"{text}|{quantity.held.encode()}"}


def semver_value(version: Semver) -> dict[int, str]:
    return {_SEMVER_KEY: version.precedence_key()}


@lru_cache(maxsize=8192)
def _carried_quantity(text: str) -> Quantity:
    value, _, stored = text.partition("|")
    return Quantity(Fraction(value), stored=Stored.decode(stored) if stored else None)


def quantity_equal(left: Any, right: Any) -> bool:
    """``==`` where the checker typed both sides ``map(string, string)``: quantities compare by
    value, as upstream's ``Quantity.Equal``; any other such maps as CEL compares maps."""
    left_quantity, right_quantity = _as_quantity(left), _as_quantity(right)
    if left_quantity is not None and right_quantity is not None:
        return left_quantity.value == right_quantity.value
    return bool(left == right)


def _as_quantity(value: Any) -> Quantity | None:
    if isinstance(value, dict) and len(value) == 1 and _QUANTITY_KEY in value:
        return _carried_quantity(value[_QUANTITY_KEY])
    return None


def _as_semver(value: Any) -> Semver | None:
    if isinstance(value, dict) and len(value) == 1 and _SEMVER_KEY in value:
        return parse_semver(value[_SEMVER_KEY])
    return None


def _no_overload(function: str) -> CelRuntimeError:
    return CelRuntimeError(f"no such overload: {function}")


def quantity_literal(text: str) -> str | None:
    """The CEL map literal a constant ``quantity("...")`` folds to, or None if it is invalid."""
    try:
        carried = quantity_value(parse_quantity(text))[_QUANTITY_KEY]
    except QuantityError:
        return None
    return f'{{"{_QUANTITY_KEY}": "{carried}"}}'


def semver_literal(text: str, normalize: bool) -> str | None:
    """The CEL map literal a constant ``semver("...")`` folds to, or None if it is invalid."""
    try:
        key = parse_semver(text, normalize).precedence_key()
    except SemverError:
        return None
    return f'{{{_SEMVER_KEY}: "{key}"}}'


def _quantity(text: str) -> dict[str, str]:
    try:
        return quantity_value(parse_quantity(text))
    except QuantityError as error:
        raise ValueError(str(error)) from None


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _semver(text: str, normalize: bool = False) -> dict[int, str]:
    try:
        return semver_value(parse_semver(text, normalize))
    except SemverError as error:
        raise ValueError(str(error)) from None


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        parse_semver(text, normalize)
    except SemverError:
        return False
    return True


def _comparison(name: str, convert: Callable[[int], Any]) -> Callable[[Any, Any], Any]:
    def compare(left: Any, right: Any) -> Any:
        left_quantity, right_quantity = _as_quantity(left), _as_quantity(right)
        if left_quantity is not None and right_quantity is not None:
            return convert(left_quantity.compare(right_quantity))
        left_version, right_version = _as_semver(left), _as_semver(right)
        if left_version is not None and right_version is not None:
            return convert(left_version.compare(right_version))
        raise _no_overload(name)

    return compare


def _quantity_method(name: str, method: Callable[[Quantity], Any]) -> Callable[[Any], Any]:
    def call(receiver: Any) -> Any:
        quantity = _as_quantity(receiver)
        if quantity is None:
            raise _no_overload(name)
        return method(quantity)

    return call


def _quantity_arithmetic(name: str, sign: int) -> Callable[[Any, Any], Any]:
    def call(receiver: Any, other: Any) -> Any:
        quantity = _as_quantity(receiver)
        # An int operand is resource.NewQuantity(int64(y), DecimalSI) upstream.
        operand = Quantity(Fraction(other)) if isinstance(other, int) else _as_quantity(other)
        if quantity is None or operand is None:
            raise _no_overload(name)
        return quantity_value(quantity.add(operand) if sign > 0 else quantity.sub(operand))

    return call


def _as_integer(quantity: Quantity) -> int:
    number = quantity.as_int64()
    if number is None:
        raise CelRuntimeError("cannot convert value to integer")
    return number


def _semver_part(name: str, index: int) -> Callable[[Any], int]:
    def call(receiver: Any) -> int:
        version = _as_semver(receiver)
        if version is None:
            raise _no_overload(name)
        return (version.major, version.minor, version.patch)[index]

    return call


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> Any:
    try:
        return re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as error:
        message = error.args[0] if error.args else error
        if isinstance(message, bytes):
            message = message.decode("utf-8", "replace")
        raise CelRuntimeError(f"error parsing regexp: {message}") from None


def _find(text: str, pattern: str) -> str:
    charge(call_cost("find", [text, pattern]))
    match = _regex(pattern).search(text)
    return match.group(0) if match else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    charge(call_cost("findAll", [text, pattern]))
    found = [match.group(0) for match in _regex(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


def _environment(internal: bool) -> Any:
    """The selector environment; ``internal`` adds the cost meter's functions, which only the
    rewritten (evaluated) text may call: a selector naming them does not compile."""
    types = cel.Type
    quantity_type = types.Map(types.STRING, types.STRING)
    semver_type = types.Map(types.INT, types.STRING)

    def overload(
        identifier: str,
        result: Any,
        parameters: list[Any],
        member: bool = False,
        implementation: Callable[..., Any] | None = None,
    ) -> Any:
        if implementation is None:
            return cel.Overload(identifier, result, parameters, is_member=member)
        return cel.Overload(identifier, result, parameters, is_member=member, impl=implementation)

    def both(name: str, result: Any, implementation: Callable[..., Any]) -> Any:
        # One implementation serves the Quantity and the Semver overload: at runtime both are
        # maps, and cel-cpp registers implementations by runtime kind only.
        return cel.FunctionDecl(
            name,
            [
                overload(
                    f"quantity_{name}", result, [quantity_type, quantity_type], True, implementation
                ),
                overload(f"semver_{name}", result, [semver_type, semver_type], True),
            ],
        )

    functions = [
        cel.FunctionDecl(
            "quantity",
            [overload("string_to_quantity", quantity_type, [types.STRING], False, _quantity)],
        ),
        cel.FunctionDecl(
            "isQuantity",
            [overload("is_quantity_string", types.BOOL, [types.STRING], False, _is_quantity)],
        ),
        cel.FunctionDecl(
            "semver",
            [
                overload("string_to_semver", semver_type, [types.STRING], False, _semver),
                overload(
                    "string_bool_to_semver", semver_type, [types.STRING, types.BOOL], False, _semver
                ),
            ],
        ),
        cel.FunctionDecl(
            "isSemver",
            [
                overload("is_semver_string", types.BOOL, [types.STRING], False, _is_semver),
                overload(
                    "is_semver_string_bool",
                    types.BOOL,
                    [types.STRING, types.BOOL],
                    False,
                    _is_semver,
                ),
            ],
        ),
        both("compareTo", types.INT, _comparison("compareTo", lambda result: result)),
        both("isGreaterThan", types.BOOL, _comparison("isGreaterThan", lambda result: result == 1)),
        both("isLessThan", types.BOOL, _comparison("isLessThan", lambda result: result == -1)),
        cel.FunctionDecl(
            "add",
            [
                overload(
                    "quantity_add",
                    quantity_type,
                    [quantity_type, quantity_type],
                    True,
                    _quantity_arithmetic("add", 1),
                ),
                overload(
                    "quantity_add_int",
                    quantity_type,
                    [quantity_type, types.INT],
                    True,
                    _quantity_arithmetic("add", 1),
                ),
            ],
        ),
        cel.FunctionDecl(
            "sub",
            [
                overload(
                    "quantity_sub",
                    quantity_type,
                    [quantity_type, quantity_type],
                    True,
                    _quantity_arithmetic("sub", -1),
                ),
                overload(
                    "quantity_sub_int",
                    quantity_type,
                    [quantity_type, types.INT],
                    True,
                    _quantity_arithmetic("sub", -1),
                ),
            ],
        ),
        cel.FunctionDecl(
            "sign",
            [
                overload(  # global upstream: sign(q), not q.sign()
                    "quantity_sign",
                    types.INT,
                    [quantity_type],
                    False,
                    _quantity_method("sign", Quantity.sign),
                )
            ],
        ),
        cel.FunctionDecl(
            "isInteger",
            [
                overload(
                    "quantity_is_integer",
                    types.BOOL,
                    [quantity_type],
                    True,
                    _quantity_method("isInteger", lambda q: q.as_int64() is not None),
                )
            ],
        ),
        cel.FunctionDecl(
            "asInteger",
            [
                overload(
                    "quantity_get_int",
                    types.INT,
                    [quantity_type],
                    True,
                    _quantity_method("asInteger", _as_integer),
                )
            ],
        ),
        cel.FunctionDecl(
            "asApproximateFloat",
            [
                overload(
                    "quantity_get_float",
                    types.DOUBLE,
                    [quantity_type],
                    True,
                    _quantity_method("asApproximateFloat", Quantity.as_approximate_float),
                )
            ],
        ),
        cel.FunctionDecl(
            "major",
            [overload("semver_major", types.INT, [semver_type], True, _semver_part("major", 0))],
        ),
        cel.FunctionDecl(
            "minor",
            [overload("semver_minor", types.INT, [semver_type], True, _semver_part("minor", 1))],
        ),
        cel.FunctionDecl(
            "patch",
            [overload("semver_patch", types.INT, [semver_type], True, _semver_part("patch", 2))],
        ),
        cel.FunctionDecl(
            "find",
            [
                overload(
                    "string_find_string", types.STRING, [types.STRING, types.STRING], True, _find
                )
            ],
        ),
        cel.FunctionDecl(
            "findAll",
            [
                overload(
                    "string_find_all_string",
                    types.List(types.STRING),
                    [types.STRING, types.STRING],
                    True,
                    _find_all,
                ),
                overload(
                    "string_find_all_string_int",
                    types.List(types.STRING),
                    [types.STRING, types.STRING, types.INT],
                    True,
                    _find_all,
                ),
            ],
        ),
    ]
    functions.extend(list_functions(overload, internal))
    functions.extend(network_functions(overload, internal))
    functions.extend(string_functions(overload, internal))
    if internal:
        functions.append(
            cel.FunctionDecl(
                "dra_qeq",
                [
                    overload(
                        "dra_qeq_map_map",
                        types.BOOL,
                        [quantity_type, quantity_type],
                        False,
                        quantity_equal,
                    )
                ],
            )
        )
        functions.extend(internal_functions(overload))
        functions.extend(comprehension_functions(overload))
    config = cel.NewEnvConfigFromYaml(
        "extensions:\n"
        "  - name: strings\n    version: 2\n"
        "  - name: sets\n"
        "  - name: lists\n"
        "  - name: bindings\n"
        "  - name: optional\n    version: 2\n" + ("" if internal else INDEX_DECLARATIONS)
    )
    variables = {
        "device_driver": types.STRING,
        "device_attributes": types.Map(types.STRING, types.Map(types.STRING, types.DYN)),
        "device_capacity": types.Map(types.STRING, types.Map(types.STRING, quantity_type)),
        "device_allowMultipleAllocations": types.BOOL,
        "device": types.Map(types.STRING, types.DYN),
    }
    if not internal:  # the evaluated text spells them as strings (dra.cel.network)
        variables.update(dict.fromkeys(network.TYPE_VARIABLES, types.DYN))
    return cel.NewEnv(config=config, variables=variables, functions=functions)


ENVIRONMENT = _environment(internal=False)
EVALUATION_ENVIRONMENT = _environment(internal=True)
BOOL_TYPE = cel.Type.BOOL
DYN_TYPE = cel.Type.DYN
ERROR_TYPE = cel.Type.ERROR
