"""Compiled selectors: compile once per expression, evaluate with result caches and limits."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from dra.cel.checked import CelType, CheckedAst, read_checked
from dra.cel.comprehensions import ComprehensionError, PositionMap
from dra.cel.costs import COST_LIMIT_MESSAGE, cost_exceeded, reset_cost, settle
from dra.cel.devices import DeviceInput, path_getter
from dra.cel.environment import (
    BOOL_TYPE,
    DYN_TYPE,
    ENVIRONMENT,
    ERROR_TYPE,
    EVALUATION_ENVIRONMENT,
    quantity_literal,
    semver_literal,
)
from dra.cel.errors import CelCompileError, CelRuntimeError
from dra.cel.gourl import url_rules
from dra.cel.lists import RENAMED
from dra.cel.network import STRING_ALIAS, uses_network
from dra.cel.reads import SelectorReads, UnknownDeviceField, UnknownFunction, analyze
from dra.cel.syntax import CelNestingError
from dra.cel.validators import validate

MAX_EXPRESSION_LENGTH = 10 * 1024
_RESULT_CACHE_LIMIT = 500_000
_QUANTITY_KEY = "kubernetes.Quantity"
_SEMVER_KEY = 0


# --- compiled selectors ------------------------------------------------------------------------

_results: dict[tuple[str, bool, tuple[Any, ...]], bool | str] = {}


_INDEX_ERROR = re.compile(r"Index error: index=(-?\d+) size=\d+")


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
    if text == "divide by zero":  # cel-go's words
        return "division by zero"
    if text.startswith("Key not found in map : "):
        return "no such key: " + text[len("Key not found in map : ") :].strip('"')
    if text.startswith("No matching overloads found"):
        return "no such overload"  # cel-go names neither the function nor the types
    index = _INDEX_ERROR.fullmatch(text)
    if index is not None:
        return f"index out of bounds: {index.group(1)}"
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
    # charges cel-go's exact cost; run only when `program`'s upper bound passes the limit
    exact_program: Any = None

    def matches(self, device: DeviceInput) -> bool:
        """Whether the device satisfies the selector; errors raise :class:`CelRuntimeError`."""
        cached = device.memo.get(self.expression)
        if cached is None:
            if self.error is not None:
                raise self.error
            if device.conversion_error is not None:
                raise CelRuntimeError(device.conversion_error)
            key = (
                self.expression,
                device.strict_host_colons,
                tuple([getter(device) for getter in self.getters]),
            )
            cached = _results.get(key)
            if cached is None:
                with url_rules(device.strict_host_colons):
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
        reads = self.reads
        result = self._run(self.program, data, reads.root_cost)
        if result is None and self.exact_program is not None:
            result = self._run(self.exact_program, data, reads.exact_root_cost)
        if result is None:  # upstream cancels the evaluation: no operator absorbs it
            return COST_LIMIT_MESSAGE
        if isinstance(result, str):
            return result
        result_type = result.type()
        if result_type == BOOL_TYPE:
            return bool(result.value())
        if result_type == ERROR_TYPE:
            return _runtime_message(str(result.value()))
        return f"CEL result of type {result_type.name().lower()} could not be converted to bool"

    @staticmethod
    def _run(program: Any, data: dict[str, Any], root_cost: int) -> Any:
        """The result value, a runtime error message, or None past the cost limit."""
        reset_cost()
        try:
            result = program.eval(data=data)
        except RuntimeError as error:
            if "budget" in str(error) or cost_exceeded():
                return None
            return _runtime_message(str(error))
        except ValueError as error:
            return _runtime_message(str(error))
        return result if settle(root_cost) else None

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
    return CelCompileError(f"compilation failed: {_cel_go_overloads(message)}")


_OVERLOAD = re.compile(
    r"(ERROR: <input>:\d+:(\d+): found no matching overload for '([^']+)' applied to )"
    r"'\((.*?)\)'(\n \| ([^\n]*)\n)"
)


def _cel_go_overloads(message: str) -> str:
    """cel-go's spelling of a failed overload: a receiver call's target before the dot
    (``'string.()'``, cel-cpp writes ``'(string)'``) and ``!error!`` for an unknown type."""

    def respell(match: re.Match[str]) -> str:
        column, function, arguments, source = (
            int(match.group(2)),
            match.group(3),
            match.group(4),
            match.group(6),
        )
        arguments = arguments.replace("*error*", "!error!")
        start = column - 1 - len(function)  # the caret sits on the call's parenthesis
        receiver = (
            start > 0
            and source[start - 1 : start] == "."
            and source[start : column - 1] == function
        )
        if receiver:
            parts = _top_level_split(arguments)
            arguments_text = f"{parts[0]}.({', '.join(parts[1:])})"
        else:
            arguments_text = f"({arguments})"
        return f"{match.group(1)}'{arguments_text}'{match.group(5)}"

    return _OVERLOAD.sub(respell, message)


def _top_level_split(text: str) -> list[str]:
    """Split a type list at the commas outside parentheses (``map(string, int), int``)."""
    parts: list[str] = []
    depth = 0
    current = ""
    for character in text:
        if character == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        depth += character == "("
        depth -= character == ")"
        current += character
    parts.append(current.strip())
    return parts


def _format_compile_failure(error: Exception) -> str:
    text = str(error)
    text = text.removeprefix("INVALID_ARGUMENT: ")
    text = re.sub(r"\s*\[INVALID_ARGUMENT\]\s*$", "", text)
    text = text.replace("device_attributes", "device.attributes").replace(
        "device_capacity", "device.capacity"
    )
    text = text.replace("device_driver", "device.driver")
    for name, alias in (*RENAMED.items(), ("string", STRING_ALIAS)):
        text = text.replace(alias, name)
    text = text.replace("device_allowMultipleAllocations", "device.allowMultipleAllocations")
    text = text.replace("map(string, string)", "kubernetes.Quantity").replace(
        "map(int, string)", "kubernetes.Semver"
    )
    return text.strip()


_LOCATED = re.compile(r"ERROR: <input>:(\d+):(\d+): (.*?)\n \| [^\n]*\n \| [.]*\^", re.DOTALL)
_RANGE = re.compile(r"found no matching overload for 'dra_range' applied to '\((.*)\)'")


def _original_positions(message: str, expression: str, checked: str, positions: PositionMap) -> str:
    """Point the errors of a rewritten text (two-variable comprehensions) into the original,
    with upstream's words for a range that is neither a list nor a map."""

    def relocate(match: re.Match[str]) -> str:
        offset = positions.original(
            _line_column_offset(checked, int(match.group(1)), int(match.group(2)))
        )
        line = expression.count("\n", 0, offset) + 1
        column = offset - (expression.rfind("\n", 0, offset) + 1)
        text = _RANGE.sub(
            r"expression of type '\1' cannot be range of a comprehension "
            "(must be list, map, or dynamic)",
            match.group(3),
        )
        source = expression.split("\n")[line - 1]
        return f"ERROR: <input>:{line}:{column + 1}: {text}\n | {source}\n | {'.' * column}^"

    message = _LOCATED.sub(relocate, message)
    if "cannot be range of a comprehension" in message:
        # the rest follows from the wrong range (cel-go stops at the range)
        return "ERROR:" + message.split("ERROR:")[1].rstrip()
    return message


_CROSS_NUMERIC = re.compile(
    r"<input>:(\d+):(\d+): found no matching overload for '_(<|<=|>|>=)_' applied to "
    r"'\((int|uint|double), (int|uint|double)\)'"
)


def _line_column_offset(text: str, line: int, column: int) -> int:
    lines = text.split("\n")
    return sum(len(item) + 1 for item in lines[: line - 1]) + column - 1


def _compile_with_cross_numeric(text: str, environment: Any = ENVIRONMENT) -> tuple[Any, str]:
    """Compile; comparisons of int/uint/double operands are allowed as with cel-go's option.

    cel-cpp's checker lacks the cross-type numeric comparison overloads (its runtime has them),
    so such a comparison is retried with both operands wrapped in ``dyn()``. Returns the
    compiled expression and the text that compiled.
    """
    from dra.cel.syntax import Operator, parse

    for _ in range(16):
        try:
            return environment.compile(text), text
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
    return environment.compile(text), text


_STRING_MAP = CelType("map", (CelType("string"), CelType("string")))


def _original_offsets(compiled_text: str, reads: SelectorReads) -> Callable[[int], int]:
    """Offsets in the compiled text → the original expression's: the cross-numeric retry may
    have wrapped operands in dyn(), the comprehension rewrite lengthened the checked text."""
    # (offset in the compiled text, in the checked text, length) of their common spans
    common = [(0, 0, len(compiled_text))]
    if compiled_text != reads.checked_text:
        matcher = difflib.SequenceMatcher(None, reads.checked_text, compiled_text, autojunk=False)
        common = [(b.b, b.a, b.size) for b in matcher.get_matching_blocks() if b.size]

    def original(offset: int) -> int:
        for compiled_start, checked_start, size in common:
            if compiled_start <= offset < compiled_start + size:
                offset = checked_start + offset - compiled_start
                break
        return reads.positions.original(offset) if reads.positions is not None else offset

    return original


def _validation_failure(
    ast: CheckedAst, compiled_text: str, expression: str, reads: SelectorReads
) -> str | None:
    """cel-go's post-check validators (:mod:`dra.cel.validators`), as compile error text."""
    errors = validate(ast)
    if not errors:
        return None
    original = _original_offsets(compiled_text, reads)
    lines = []
    for error in errors:
        offset = original(error.position)
        line = expression.count("\n", 0, offset) + 1
        column = offset - (expression.rfind("\n", 0, offset) + 1)
        source = expression.split("\n")[line - 1]
        lines.append(
            f"ERROR: <input>:{line}:{column + 1}: {error.message}\n | {source}\n | {'.' * column}^"
        )
    return "\n".join(lines)


def _quantity_equalities(
    ast: CheckedAst, compiled_text: str, reads: SelectorReads
) -> frozenset[int]:
    """Where the original expression compares quantities with ``==``/``!=``: calls the checker
    typed on ``map(string, string)`` (what quantities are here). Their values compare by value
    upstream, while the maps carry how Go holds each value too (``2`` vs ``2.0``)."""
    original = _original_offsets(compiled_text, reads)
    found = set()
    stack = [ast.root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if (
            node.kind == "call"
            and node.function in ("_==_", "_!=_")
            and node.args
            and ast.type_of(node.args[0]) == _STRING_MAP
            and node.id in ast.positions
        ):
            found.add(original(ast.positions[node.id]))
    return frozenset(found)


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
    except CelNestingError as error:
        return CompiledSelector(expression, None, None, _compile_error(expression, str(error)))
    except (UnknownDeviceField, UnknownFunction, ComprehensionError) as error:
        position = error.position
        if isinstance(error, UnknownDeviceField):
            problem = f"undefined field '{error.name}'"
            position = expression.rfind(".", 0, position + 1)  # cel-go points at the dot
        elif isinstance(error, UnknownFunction):
            problem = f"undeclared reference to '{error.name}' (in container '')"
        else:
            problem = error.message
        line = expression.count("\n", 0, position) + 1
        start = expression.rfind("\n", 0, position) + 1
        column = position - start
        source = expression.split("\n")[line - 1]
        return CompiledSelector(
            expression,
            None,
            None,
            _compile_error(
                expression,
                f"ERROR: <input>:{line}:{column + 1}: {problem}\n | {source}\n | {'.' * column}^",
            ),
        )
    try:
        checked, compiled_text = _compile_with_cross_numeric(reads.checked_text)
    except RuntimeError as error:
        message = _format_compile_failure(error)
        if reads.positions is not None:
            message = _original_positions(message, expression, reads.checked_text, reads.positions)
        return CompiledSelector(expression, reads, None, _compile_error(expression, message))
    checked_ast = read_checked(checked.serialize())
    failure = _validation_failure(checked_ast, compiled_text, expression, reads)
    if failure is not None:
        return CompiledSelector(expression, reads, None, _compile_error(expression, failure))
    result_type = checked.return_type()
    if result_type != BOOL_TYPE and result_type != DYN_TYPE:
        name = _format_compile_failure(RuntimeError(result_type.name().lower()))
        return CompiledSelector(
            expression,
            reads,
            None,
            _compile_error(expression, f"must evaluate to bool or the unknown type, not {name}"),
        )
    if not reads.parsed:
        # Without a tree there is no cost meter, and an unmetered selector could run away.
        return CompiledSelector(
            expression,
            reads,
            None,
            _compile_error(expression, "the selector uses syntax the cost analysis cannot read"),
        )
    equalities = _quantity_equalities(checked_ast, compiled_text, reads)
    if equalities:
        reads = analyze(
            expression, quantity_literal, semver_literal, quantity_equalities=equalities
        )
    program = checked
    # The renamed indexOf/lastIndexOf are declared with types for checking and implemented in
    # the evaluation environment only (dra.cel.lists).
    renamed = any(alias in reads.checked_text for alias in RENAMED.values())
    renamed = renamed or uses_network(reads.checked_text)  # network values: dra.cel.network
    exact_program = None
    try:
        if reads.evaluated_text != reads.checked_text or renamed:
            program, _ = _compile_with_cross_numeric(reads.evaluated_text, EVALUATION_ENVIRONMENT)
        if reads.exact_text:
            exact_program, _ = _compile_with_cross_numeric(reads.exact_text, EVALUATION_ENVIRONMENT)
    except RuntimeError as error:
        # The rewrites keep every type; a failure here is a bug, not the author's error.
        return CompiledSelector(
            expression, reads, None, _compile_error(expression, f"internal rewrite failed: {error}")
        )
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
    getters = tuple(path_getter(path) for path in paths)
    return CompiledSelector(
        expression, reads, program, None, getters, tuple(domains), ids, exact_program
    )


def clear_caches() -> None:
    """Forget compiled programs and cached results (tests; memory pressure)."""
    compile_selector.cache_clear()
    _results.clear()


def selector_errors(expressions: Sequence[str | None]) -> list[str]:
    """Compile errors of a class's or request's selectors, numbered from 1 as people count
    them ("Selector 1: ..."); a ``None`` entry is a selector that is not a CEL selector."""
    errors = []
    for number, expression in enumerate(expressions, 1):
        if expression is None:
            errors.append(f"Selector {number}: not a CEL selector")
            continue
        error = compile_selector(expression).error
        if error is not None:
            errors.append(f"Selector {number}: {error}")
    return errors
