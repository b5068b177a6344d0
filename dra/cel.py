"""The CEL environment of DRA selectors, evaluated with cel-expr-python (Google's cel-cpp).

This is the only module that imports ``cel_expr_python`` (STYLE §8). It provides:

* the Kubernetes environment: ``device.driver``, ``device.attributes``, ``device.capacity``,
  ``device.allowMultipleAllocations``; unknown attribute/capacity domains read as empty maps,
  a missing id inside a domain is a runtime error; strings (v2), sets, lists, optional types,
  ``cel.bind``; ``quantity()``/``semver()`` and their methods; ``find``/``findAll``;
* Kubernetes' exact numeric semantics for quantities (``80Gi == 81920Mi``) and semver
  precedence (build metadata ignored) — both are carried as small maps holding a canonical key,
  so ``==`` compares values and no ordering operator applies to them (as in Kubernetes);
* limits: expressions over 10 Ki characters are rejected; evaluation aborts with "cost limit
  exceeded" when cel-cpp's iteration budget (10,000 comprehension steps) is exhausted — cel-cpp
  offers no cost tracker, see docs/benchmarks.md for this difference from cel-go's 1,000,000;
* caches: compiled programs by expression, and results by (expression, the values of the device
  paths the expression reads), so devices of one model share one evaluation.

Why a parser of our own next to the binding: cel-expr-python cannot declare an object type or a
map with a default, so selectors are rewritten before compiling (see :mod:`.celreads`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

from cel_expr_python import cel

from dra.celreads import ReadPath, SelectorReads, UnknownDeviceField, analyze
from dra.model import AttributeValue, Device, qualify
from dra.quantity import Quantity, QuantityError, parse_quantity
from dra.semver import Semver, SemverError, parse_semver

__all__ = [
    "MAX_EXPRESSION_LENGTH",
    "CelCompileError",
    "CelRuntimeError",
    "DeviceInput",
    "CompiledSelector",
    "compile_selector",
    "device_input",
    "clear_caches",
]

MAX_EXPRESSION_LENGTH = 10 * 1024
_RESULT_CACHE_LIMIT = 500_000
_QUANTITY_KEY = "kubernetes.Quantity"
_SEMVER_KEY = 0


class CelCompileError(Exception):
    """The expression does not compile in the DRA environment (message includes line:col)."""


class CelRuntimeError(Exception):
    """Evaluation failed for one device (missing key, bad argument, cost limit, non-bool...)."""


# --- values ------------------------------------------------------------------------------------


def _quantity_value(quantity: Quantity) -> dict[str, str]:
    value = quantity.value
    text = (
        str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    )
    return {_QUANTITY_KEY: text}


def _semver_value(version: Semver) -> dict[int, str]:
    return {_SEMVER_KEY: version.precedence_key()}


@lru_cache(maxsize=8192)
def _carried_quantity(text: str) -> Quantity:
    return Quantity(Fraction(text))


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
        carried = _quantity_value(parse_quantity(text))[_QUANTITY_KEY]
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
        return _quantity_value(parse_quantity(text))
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
        return _semver_value(parse_semver(text, normalize))
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
        operand = Quantity(Fraction(other)) if isinstance(other, int) else _as_quantity(other)
        if quantity is None or operand is None:
            raise _no_overload(name)
        return _quantity_value(Quantity(quantity.value + sign * operand.value))

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


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise CelRuntimeError(f"error parsing regexp: {error}") from None


def _find(text: str, pattern: str) -> str:
    match = _regex(pattern).search(text)
    return match.group(0) if match else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found = [match.group(0) for match in _regex(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


def _environment() -> Any:
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
                overload(
                    "quantity_sign",
                    types.INT,
                    [quantity_type],
                    True,
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
    config = cel.NewEnvConfigFromYaml(
        "extensions:\n"
        "  - name: strings\n    version: 2\n"
        "  - name: sets\n"
        "  - name: lists\n"
        "  - name: bindings\n"
        "  - name: optional\n    version: 2\n"
    )
    variables = {
        "device_driver": types.STRING,
        "device_attributes": types.Map(types.STRING, types.Map(types.STRING, types.DYN)),
        "device_capacity": types.Map(types.STRING, types.Map(types.STRING, quantity_type)),
        "device_allowMultipleAllocations": types.BOOL,
        "device": types.Map(types.STRING, types.DYN),
    }
    return cel.NewEnv(config=config, variables=variables, functions=functions)


_ENV = _environment()
_BOOL = cel.Type.BOOL
_DYN = cel.Type.DYN
_ERROR = cel.Type.ERROR


# --- devices as selectors see them -------------------------------------------------------------


@dataclass(slots=True)
class DeviceInput:
    """What a selector can read of one device, in both hashable and CEL form."""

    driver: str
    attributes: dict[str, dict[str, AttributeValue]]
    capacity: dict[str, dict[str, Quantity]]
    allow_multiple_allocations: bool
    conversion_error: str | None
    cel_attributes: dict[str, dict[str, Any]] = field(default_factory=dict)
    cel_capacity: dict[str, dict[str, Any]] = field(default_factory=dict)
    _content_key: tuple[Any, ...] | None = None
    memo: dict[str, bool | str] = field(default_factory=dict)  # expression → result

    def content_key(self) -> tuple[Any, ...]:
        """Everything a selector could observe, for expressions read as a whole."""
        if self._content_key is None:
            self._content_key = (
                self.driver,
                self.allow_multiple_allocations,
                tuple(sorted((d, tuple(sorted(v.items()))) for d, v in self.attributes.items())),
                tuple(sorted((d, tuple(sorted(v.items()))) for d, v in self.capacity.items())),
            )
        return self._content_key


def device_input(device: Device, driver: str, expose_multiple_allocations: bool) -> DeviceInput:
    """Group a device's attributes and capacity by domain (unqualified names → the driver's)."""
    attributes: dict[str, dict[str, AttributeValue]] = {}
    cel_attributes: dict[str, dict[str, Any]] = {}
    conversion_error = None
    for name, value in device.attributes.items():
        domain, identifier = qualify(name, driver)
        attributes.setdefault(domain, {})[identifier] = value
        kind, raw = value
        converted: Any = raw
        if kind == "version":
            try:
                converted = _semver_value(parse_semver(str(raw)))
            except SemverError as error:
                conversion_error = f"attribute {name}: parse semantic version: {error}"
        elif kind not in ("int", "bool", "string"):
            conversion_error = f"attribute {name}: unsupported attribute value"
        cel_attributes.setdefault(domain, {})[identifier] = converted
    capacity: dict[str, dict[str, Quantity]] = {}
    cel_capacity: dict[str, dict[str, Any]] = {}
    for name, device_capacity in device.capacity.items():
        domain, identifier = qualify(name, driver)
        capacity.setdefault(domain, {})[identifier] = device_capacity.value
        cel_capacity.setdefault(domain, {})[identifier] = _quantity_value(device_capacity.value)
    allow_multiple = bool(device.allow_multiple_allocations) and expose_multiple_allocations
    return DeviceInput(
        driver, attributes, capacity, allow_multiple, conversion_error, cel_attributes, cel_capacity
    )


def _getter(path: ReadPath) -> Callable[[DeviceInput], Any]:
    kind = path[0]
    if kind == "driver":
        return lambda device: device.driver
    if kind == "multi":
        return lambda device: device.allow_multiple_allocations
    if kind in ("attr", "cap"):
        domain, identifier = path[1], path[2]
        if kind == "attr":
            return lambda device: device.attributes.get(domain, {}).get(identifier)
        return lambda device: device.capacity.get(domain, {}).get(identifier)
    if kind in ("attrdomain", "capdomain"):
        domain = path[1]
        if kind == "attrdomain":
            return lambda device: _frozen(device.attributes.get(domain))
        return lambda device: _frozen(device.capacity.get(domain))
    if kind == "attrs":
        return lambda device: device.content_key()[2]
    if kind == "caps":
        return lambda device: device.content_key()[3]
    return DeviceInput.content_key


def _frozen(mapping: Mapping[str, Any] | None) -> tuple[Any, ...] | None:
    return None if mapping is None else tuple(sorted(mapping.items()))


# --- compiled selectors ------------------------------------------------------------------------

_results: dict[tuple[str, tuple[Any, ...]], bool | str] = {}


def _runtime_message(message: str) -> str:
    text = message
    for prefix in (
        "NOT_FOUND: ",
        "INVALID_ARGUMENT: ",
        "OUT_OF_RANGE: ",
        "UNKNOWN: ",
        "INTERNAL: ",
    ):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    if text.startswith("Key not found in map : "):
        return "no such key: " + text[len("Key not found in map : ") :].strip('"')
    if text.startswith("No matching overloads found"):
        return "no such overload: " + text.split(":", 1)[-1].strip()
    return text


@dataclass(slots=True)
class CompiledSelector:
    """A compiled selector; :meth:`matches` raises the compile error if there was one."""

    expression: str
    reads: SelectorReads | None
    program: Any
    error: CelCompileError | None
    getters: tuple[Callable[[DeviceInput], Any], ...] = ()
    domains: tuple[tuple[str, frozenset[str] | None], ...] = ()
    ids: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = field(default_factory=dict)

    def matches(self, device: DeviceInput) -> bool:
        """Whether the device satisfies the selector; errors raise :class:`CelRuntimeError`."""
        cached = device.memo.get(self.expression)
        if cached is None:
            if self.error is not None:
                raise self.error
            if device.conversion_error is not None:
                raise CelRuntimeError(device.conversion_error)
            key = (self.expression, tuple([getter(device) for getter in self.getters]))
            cached = _results.get(key)
            if cached is None:
                cached = self._evaluate(device)
                if len(_results) >= _RESULT_CACHE_LIMIT:
                    _results.clear()
                _results[key] = cached
            device.memo[self.expression] = cached
        if cached is True or cached is False:
            return cached
        raise CelRuntimeError(cached)

    def _evaluate(self, device: DeviceInput) -> bool | str:
        assert self.reads is not None
        data: dict[str, Any] = {}
        variables = self.reads.variables
        if "device_driver" in variables:
            data["device_driver"] = device.driver
        if "device_allowMultipleAllocations" in variables:
            data["device_allowMultipleAllocations"] = device.allow_multiple_allocations
        if "device_attributes" in variables:
            data["device_attributes"] = self._subset(device.cel_attributes, "attr")
        if "device_capacity" in variables:
            data["device_capacity"] = self._subset(device.cel_capacity, "cap")
        if "device" in variables:
            data["device"] = {
                "driver": device.driver,
                "attributes": device.cel_attributes,
                "capacity": device.cel_capacity,
                "allowMultipleAllocations": device.allow_multiple_allocations,
            }
        try:
            result = self.program.eval(data=data)
        except RuntimeError as error:
            if "budget" in str(error):
                return "operation cancelled: actual cost limit exceeded"
            return _runtime_message(str(error))
        result_type = result.type()
        if result_type == _BOOL:
            return bool(result.value())
        if result_type == _ERROR:
            return _runtime_message(str(result.value()))
        return f"CEL result of type {result_type.name().lower()} could not be converted to bool"

    def _subset(self, maps: dict[str, dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
        """Only the domains (and, for literal-only reads, only the ids) the expression reads.

        Smaller maps convert faster; the result is the same because every path the expression
        can reach is included with its real value or real absence.
        """
        wanted = self.ids.get(kind)
        if wanted is not None:
            subset: dict[str, dict[str, Any]] = {}
            for domain, identifiers in wanted:
                values = maps.get(domain)
                if values is not None:
                    subset[domain] = {name: values[name] for name in identifiers if name in values}
            return subset
        for map_kind, domains in self.domains:
            if map_kind == kind:
                if domains is None:
                    return maps
                return {domain: maps[domain] for domain in domains if domain in maps}
        return maps


def _compile_error(expression: str, message: str) -> CelCompileError:
    return CelCompileError(f"compilation failed: {message}")


def _format_compile_failure(error: Exception) -> str:
    text = str(error)
    text = text.removeprefix("INVALID_ARGUMENT: ")
    text = re.sub(r"\s*\[INVALID_ARGUMENT\]\s*$", "", text)
    text = text.replace("device_attributes", "device.attributes").replace(
        "device_capacity", "device.capacity"
    )
    text = text.replace("device_driver", "device.driver")
    text = text.replace("device_allowMultipleAllocations", "device.allowMultipleAllocations")
    text = text.replace("map(string, string)", "kubernetes.Quantity").replace(
        "map(int, string)", "kubernetes.Semver"
    )
    return text.strip()


_CROSS_NUMERIC = re.compile(
    r"<input>:(\d+):(\d+): found no matching overload for '_(<|<=|>|>=)_' applied to "
    r"'\((int|uint|double), (int|uint|double)\)'"
)


def _line_column_offset(text: str, line: int, column: int) -> int:
    lines = text.split("\n")
    return sum(len(item) + 1 for item in lines[: line - 1]) + column - 1


def _compile(text: str) -> Any:
    return _ENV.compile(text)


def _compile_with_cross_numeric(text: str) -> Any:
    """Compile; comparisons of int/uint/double operands are allowed as with cel-go's option.

    cel-cpp's checker lacks the cross-type numeric comparison overloads (its runtime has them),
    so such a comparison is retried with both operands wrapped in ``dyn()``.
    """
    from dra.celsyntax import Operator, parse

    for _ in range(16):
        try:
            return _compile(text)
        except RuntimeError as error:
            matches = _CROSS_NUMERIC.findall(str(error))
            left, right = (matches[0][3], matches[0][4]) if matches else ("", "")
            if not matches or left == right:
                raise
            offset = _line_column_offset(text, int(matches[0][0]), int(matches[0][1]))
            tree = parse(text)
            stack = [tree]
            found = None
            while stack:
                node = stack.pop()
                if (
                    isinstance(node, Operator)
                    and node.position == offset
                    and len(node.operands) == 2
                ):
                    found = node
                    break
                for child in (
                    getattr(node, "operands", [])
                    + getattr(node, "args", [])
                    + getattr(node, "children", [])
                ):
                    stack.append(child)
                for attribute in ("operand", "key", "target"):
                    child = getattr(node, attribute, None)
                    if child is not None:
                        stack.append(child)
            if found is None:
                raise
            first, second = found.operands
            text = (
                text[: first.start] + "dyn(" + text[first.start : first.end] + ")"
                + text[first.end : second.start] + "dyn(" + text[second.start : second.end] + ")"
                + text[second.end :]
            )  # fmt: skip
    return _compile(text)


@lru_cache(maxsize=4096)
def compile_selector(expression: str) -> CompiledSelector:
    """Compile (cached by expression). Failures are kept and raised by :meth:`matches`."""
    if len(expression) > MAX_EXPRESSION_LENGTH:
        return CompiledSelector(
            expression,
            None,
            None,
            CelCompileError(
                f"expression too long ({len(expression)} characters, the limit is "
                f"{MAX_EXPRESSION_LENGTH})"
            ),
        )
    try:
        reads = analyze(expression, quantity_literal, semver_literal)
    except UnknownDeviceField as error:
        line = expression.count("\n", 0, error.position) + 1
        column = error.position - (expression.rfind("\n", 0, error.position) + 1) + 1
        return CompiledSelector(
            expression,
            None,
            None,
            _compile_error(
                expression, f"ERROR: <input>:{line}:{column}: undefined field '{error.name}'"
            ),
        )
    try:
        checked = _compile_with_cross_numeric(reads.checked_text)
    except RuntimeError as error:
        return CompiledSelector(
            expression, reads, None, _compile_error(expression, _format_compile_failure(error))
        )
    result_type = checked.return_type()
    if result_type != _BOOL and result_type != _DYN:
        name = _format_compile_failure(RuntimeError(result_type.name().lower()))
        return CompiledSelector(
            expression,
            reads,
            None,
            _compile_error(expression, f"must evaluate to bool or the unknown type, not {name}"),
        )
    program = checked
    if reads.evaluated_text != reads.checked_text:
        try:
            program = _compile_with_cross_numeric(reads.evaluated_text)
        except RuntimeError:
            program = checked
    paths = sorted(reads.paths)
    domains: list[tuple[str, frozenset[str] | None]] = []
    for kind in ("attr", "cap"):
        if any(path[0] in (f"{kind}s", "all") for path in paths):
            domains.append((kind, None))
        else:
            wanted = frozenset(path[1] for path in paths if path[0] in (kind, f"{kind}domain"))
            domains.append((kind, wanted))
    ids: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {}
    for kind in ("attr", "cap"):
        if any(path[0] in (f"{kind}s", f"{kind}domain", "all") for path in paths):
            continue
        by_domain: dict[str, list[str]] = {}
        for path in paths:
            if path[0] == kind:
                by_domain.setdefault(path[1], []).append(path[2])
        ids[kind] = tuple((domain, tuple(names)) for domain, names in by_domain.items())
    getters = tuple(_getter(path) for path in paths)
    if not reads.parsed:
        getters = (DeviceInput.content_key,)
        ids = {}
    return CompiledSelector(expression, reads, program, None, getters, tuple(domains), ids)


def clear_caches() -> None:
    """Forget compiled programs and cached results (tests; memory pressure)."""
    compile_selector.cache_clear()
    _results.clear()
