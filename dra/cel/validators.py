"""The compile-time checks cel-go runs on a type-checked selector in Kubernetes' environment,
which cel-cpp does not have:

* ``"…".format([...])`` with a literal format string and a list literal (strings extension,
  ``ext/formatting.go``): each clause is parsed and its argument's static type checked, and the
  argument count must match (too few: "index N out of range"; too many: "too many arguments
  supplied to string.format");
* homogeneous aggregate literals (``cel.HomogeneousAggregateLiterals``): every element of a list
  literal, every key and every value of a map literal has one type (``[1, "a"]`` does not
  compile); literals anywhere inside a ``format`` call are exempt;
* literal arguments of ``duration()``, ``timestamp()`` and ``matches()`` must be valid
  (``cel.ValidateDurationLiterals``, ``ValidateTimestampLiterals``, ``ValidateRegexLiterals``).

Upstream declares attribute values as ``google.protobuf.Any``, which both checks refuse where a
specific type is wanted (``[attribute, 1]``, ``"%s".format([attribute])``); here they are ``dyn``,
so a direct attribute lookup is given upstream's type (a value reached through ``cel.bind`` or a
comprehension variable stays ``dyn``, and passes).

Each check reports at the offset upstream reports at, in the text that was compiled.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from fractions import Fraction

import re2  # type: ignore[import-untyped]  # RE2: Go's regexp syntax

from dra.cel.checked import CelType, CheckedAst, CheckedNode

__all__ = ["ValidationError", "validate"]

_QUANTITY = CelType("map", (CelType("string"), CelType("string")))
_SEMVER = CelType("map", (CelType("int"), CelType("string")))
_QUANTITY_OVERLOADS = frozenset(
    {"string_to_quantity", "quantity_add", "quantity_add_int", "quantity_sub", "quantity_sub_int"}
)
_SEMVER_OVERLOADS = frozenset({"string_to_semver", "string_bool_to_semver"})
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


@dataclass(frozen=True, slots=True)
class ValidationError:
    position: int  # offset in the compiled text, in code points
    message: str


class _FormatError(ValueError):
    def __init__(self, message: str, node: CheckedNode | None = None) -> None:
        super().__init__(message)
        self.node = node


_ANY = CelType("google.protobuf.Any")


def _type_of(ast: CheckedAst, node: CheckedNode) -> CelType:
    """The node's type as upstream's checker has it. Attribute values are declared
    ``google.protobuf.Any`` there (``dyn`` here, which checks alike but is another type);
    quantities and semvers are opaque types there (maps here)."""
    operand = _lookup_operand(node)
    inner = _lookup_operand(operand) if operand is not None else None
    if inner is not None and inner.kind == "ident" and inner.name == "device_attributes":
        return _ANY
    kind = ast.type_of(node)
    if kind == _QUANTITY and _is_quantity(ast, node):
        return CelType("kubernetes.Quantity")
    if kind == _SEMVER and _is_semver(ast, node):
        return CelType("kubernetes.Semver")
    return kind


def _type_name(ast: CheckedAst, node: CheckedNode) -> str:
    """cel-go's ``Type.TypeName()``."""
    return _type_of(ast, node).kind


def _is_quantity(ast: CheckedAst, node: CheckedNode) -> bool:
    """Whether a ``map(string, string)``-typed node is a quantity (capacity values are quantities
    upstream, an opaque type): a quantity function's result or a value of ``device.capacity``."""
    if node.kind == "call" and _QUANTITY_OVERLOADS & set(ast.overloads.get(node.id, [])):
        return True
    operand = _lookup_operand(node)
    inner = _lookup_operand(operand) if operand is not None else None
    return inner is not None and inner.kind == "ident" and inner.name == "device_capacity"


def _is_semver(ast: CheckedAst, node: CheckedNode) -> bool:
    return node.kind == "call" and bool(_SEMVER_OVERLOADS & set(ast.overloads.get(node.id, [])))


def _lookup_operand(node: CheckedNode) -> CheckedNode | None:
    if node.kind == "select":
        return node.target
    if node.kind == "call" and node.function == "_[_]" and node.args:
        return node.args[0]
    return None


# --- format ------------------------------------------------------------------------------------

_SCALARS = {
    "int", "uint", "double", "bool", "string", "google.protobuf.Timestamp", "bytes",
    "google.protobuf.Duration", "type", "null_type",
}  # fmt: skip
_CLAUSES = {
    "d": (("int", "uint"), "decimal clause can only be used on integers"),
    "f": (("double", "string"), "fixed-point clause can only be used on doubles"),
    "e": (("double", "string"), "scientific clause can only be used on doubles"),
    "b": (("int", "uint", "bool"), "only integers and bools can be formatted as binary"),
    "x": (
        ("int", "uint", "string", "bytes"),
        "only integers, byte buffers, and strings can be formatted as hex",
    ),
    "o": (("int", "uint"), "octal clause can only be used on integers"),
}
_STRING_CLAUSE = (
    "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, "
    "durations, and timestamps"
)


def _kind_of(ast: CheckedAst, node: CheckedNode) -> str:
    """The kind cel-go's checker compares (opaque Kubernetes types are no map)."""
    name = _type_name(ast, node)
    return "opaque" if name.startswith("kubernetes.") else _type_of(ast, node).kind


def _verify_string(ast: CheckedAst, node: CheckedNode) -> CheckedNode | None:
    """The node whose type ``%s`` refuses (recursing into list and map literals), or None."""
    stack = [node]
    while stack:
        item = stack.pop()
        kind = _kind_of(ast, item)
        if kind != "dyn" and kind not in _SCALARS and kind not in ("list", "map"):
            return item
        if item.kind == "list":
            stack.extend(reversed(item.args))
        elif item.kind == "struct":
            for key, value, _ in reversed(item.entries):
                stack.append(value)
                if key is not None:
                    stack.append(key)
    return None


def _check_clause(ast: CheckedAst, verb: str, argument: CheckedNode) -> None:
    if verb == "s":
        bad = _verify_string(ast, argument)
        if bad is not None:
            raise _FormatError(f"{_STRING_CLAUSE}, was given {_type_name(ast, bad)}", bad)
        return
    allowed, message = _CLAUSES["x" if verb == "X" else verb]
    kind = _kind_of(ast, argument)
    if kind != "dyn" and kind not in allowed:
        raise _FormatError(f"{message}, was given {_type_name(ast, argument)}", argument)


def _check_format(ast: CheckedAst, text: str, args: list[CheckedNode]) -> int:
    """Walk the format string as cel-go's parser does; the number of arguments it requests."""
    index = requested = 0
    data = text.encode()  # cel-go indexes the format string by byte
    while index < len(data):
        if data[index] != ord("%"):
            index += 1
            continue
        if index + 1 < len(data) and data[index + 1] == ord("%"):
            index += 2
            continue
        requested += 1
        if index + 1 >= len(data):
            raise _FormatError("unexpected end of string")
        if requested > len(args):
            raise _FormatError(f"index {requested - 1} out of range")
        index += 1
        if data[index] == ord("."):
            index += 1
            start = index
            while True:
                if index >= len(data):
                    raise _FormatError(
                        "could not parse formatting clause: error while parsing precision: "
                        "could not find end of precision specifier"
                    )
                if not 48 <= data[index] <= 57:  # ASCII digits only, as Go's check
                    break
                index += 1
            if start == index:
                raise _FormatError(
                    "could not parse formatting clause: error while parsing precision: error "
                    'while converting precision to integer: strconv.Atoi: parsing "": invalid '
                    "syntax"
                )
        verb = chr(data[index])
        index += 1
        if verb not in "sdfebxXo":
            raise _FormatError(
                f'could not parse formatting clause: unrecognized formatting clause "{verb}"'
            )
        try:
            _check_clause(ast, verb, args[requested - 1])
        except _FormatError as error:
            raise _FormatError(f"error during formatting: {error}", error.node) from None
    return requested


def _format_errors(ast: CheckedAst, node: CheckedNode) -> list[tuple[int, str]]:
    target = node.target
    if target is None or target.kind != "const" or target.constant_kind != "string":
        return []
    if len(node.args) != 1 or node.args[0].kind != "list":
        return []
    overloads = ast.overloads.get(node.id, [])
    if overloads and "string_format" not in overloads:
        return []
    args = node.args[0].args
    try:
        requested = _check_format(ast, str(target.constant), args)
    except _FormatError as error:
        where = error.node if error.node is not None else node
        return [(where.id, str(error))]
    if len(args) > requested:
        message = (
            f"too many arguments supplied to string.format (expected {requested}, got {len(args)})"
        )
        return [(node.id, message)]
    return []


# --- homogeneous aggregate literals ------------------------------------------------------------


def _element_type(ast: CheckedAst, node: CheckedNode, optional: bool) -> CelType:
    kind = _type_of(ast, node)
    if optional and kind.parameters:
        return kind.parameters[0]
    return kind


def _literal_errors(ast: CheckedAst, node: CheckedNode) -> list[tuple[int, str]]:
    errors: list[tuple[int, str]] = []
    if node.kind == "list":
        first: tuple[CheckedNode, CelType] | None = None
        for index, element in enumerate(node.args):
            kind = _element_type(ast, element, index in node.optional_indices)
            if first is None:
                first = (element, kind)
            elif kind != first[1]:
                errors.append((element.id, f"expected type '{first[1]}' but found '{kind}'"))
                break
    elif node.kind == "struct" and all(key is not None for key, _, _ in node.entries):
        types: tuple[CelType, CelType] | None = None
        for key, value, optional in node.entries:
            assert key is not None
            key_type, value_type = _type_of(ast, key), _element_type(ast, value, optional)
            if types is None:
                types = (key_type, value_type)
                continue
            for found_node, expected, found in (
                (key, types[0], key_type),
                (value, types[1], value_type),
            ):
                if found != expected:
                    errors.append(
                        (found_node.id, f"expected type '{expected}' but found '{found}'")
                    )
    return errors


# --- literal arguments -------------------------------------------------------------------------

_DURATION = re.compile(r"[-+]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+")
_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?(ns|us|µs|μs|ms|s|m|h)")
_UNIT_NANOSECONDS = {
    "ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 10**9,
    "m": 60 * 10**9, "h": 3600 * 10**9,
}  # fmt: skip


def _valid_duration(text: str) -> bool:
    """Go's ``time.ParseDuration``: its syntax, and no more than 2⁶³−1 ns (its overflow)."""
    if text in ("0", "+0", "-0"):
        return True
    if _DURATION.fullmatch(text) is None:
        return False
    total = Fraction(0)
    for whole, fraction, unit in _DURATION_PART.findall(text):
        scale = _UNIT_NANOSECONDS[unit]
        total += int(whole or "0") * scale
        if fraction:
            total += Fraction(int(fraction), 10 ** len(fraction)) * scale
    return total <= 2**63 - (0 if text.startswith("-") else 1)


_UNIX_RANGE = (-62_135_596_800, 253_402_300_799)  # 0001-01-01 to 9999-12-31, CEL's range
_EPOCH = datetime.datetime(1970, 1, 1)  # noqa: DTZ001 (naive arithmetic on purpose)


def _valid_timestamp(text: str) -> bool:
    """Go's ``time.Parse(time.RFC3339, ...)``, then CEL's range check of the instant."""
    match = re.fullmatch(
        r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
        r"(Z|[+-][0-9]{2}:[0-9]{2})",
        text,
    )
    if match is None:
        return False
    try:
        year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
        moment = datetime.datetime(year, month, day, hour, minute, second)  # noqa: DTZ001
    except ValueError:
        return False
    zone = match.group(8)
    offset = 0
    if zone != "Z":
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        if hours > 23 or minutes > 59:
            return False
        offset = (hours * 3600 + minutes * 60) * (-1 if zone[0] == "-" else 1)
    unix = (moment - _EPOCH) // datetime.timedelta(seconds=1) - offset
    return _UNIX_RANGE[0] <= unix <= _UNIX_RANGE[1]


def _valid_regex(text: str) -> bool:
    try:
        re2.compile(text, options=_RE2_OPTIONS)
    except re2.error:
        return False
    return True


_LITERAL_CHECKS = {
    "duration": _valid_duration,
    "timestamp": _valid_timestamp,
    "matches": _valid_regex,
}


def _argument_errors(node: CheckedNode) -> list[tuple[int, str]]:
    check = _LITERAL_CHECKS.get(node.function)
    if check is None or not node.args:
        return []
    argument = node.args[0]
    if argument.kind != "const":
        return []
    if argument.constant_kind == "string":
        valid = check(str(argument.constant))
    elif node.function == "timestamp" and argument.constant_kind == "int":
        valid = _UNIX_RANGE[0] <= int(str(argument.constant)) <= _UNIX_RANGE[1]
    else:
        valid = True  # the checker accepted the overload; its conversion cannot fail
    return [] if valid else [(argument.id, f"invalid {node.function} argument")]


# --- the walk ----------------------------------------------------------------------------------


def validate(ast: CheckedAst) -> list[ValidationError]:
    """The errors cel-go's validators report on this checked expression, in source order."""
    found: list[tuple[int, str]] = []
    stack: list[tuple[CheckedNode, bool]] = [(ast.root, False)]
    while stack:
        node, in_format = stack.pop()
        if node.kind == "call":
            if node.function == "format" and node.target is not None:
                found.extend(_format_errors(ast, node))
            found.extend(_argument_errors(node))
        if not in_format:
            found.extend(_literal_errors(ast, node))
        inside = in_format or (node.kind == "call" and node.function == "format")
        stack.extend((child, inside) for child in node.children)
    errors = [ValidationError(ast.positions.get(node_id, 0), message) for node_id, message in found]
    return sorted(errors, key=lambda error: error.position)
