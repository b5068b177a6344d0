"""Two-variable comprehensions (cel-go's ``ext.TwoVarComprehensions``) on cel-cpp.

Kubernetes' base environment has them since 1.32: ``all``, ``exists``, ``existsOne`` (and
``exists_one``) with three arguments, ``transformList``, ``transformMap`` and
``transformMapEntry`` with three or four. Over a list the variables are the index and the element,
over a map the key and the value (a one-variable ``existsOne`` is a compile error upstream, as
here: only ``exists_one`` has one variable). cel-cpp 0.1.3 has none of them, so the source is
rewritten into one-variable macros over the range's keys
(``lists.range(size)`` for a list, the map itself for a map) with ``cel.bind`` giving the second
variable its value:

* the *checked* text (types and compile errors) passes the range through ``dra_range`` (lists,
  maps and dyn only) and iterates ``dra_keys(t)``, declared for lists (``list<int>``) and maps
  (``list<K>``) in the checking environment only, so every variable gets upstream's static
  type; ``transformMap``/``transformMapEntry`` build their result through declarations with
  upstream's result types (``map<int, V>`` over a list);
* the *evaluated* text picks the key list by the range's runtime type, and builds maps in Python
  (:func:`transform_map`, :func:`transform_map_entries`).

Each element is handled as upstream's fold does: the filter, then the transform, of one element
before the next (cel-cpp's three-argument ``map``), and ``all``/``exists`` keep cel-go's
error-absorbing short circuit (the one-variable macros have the same expansion).

The optional library's version-2 ``optional.unwrap(list)`` and ``list.unwrapOpt()`` (also
missing from cel-cpp) become ``filter``/``map`` over the list the same way.

The checked text is longer than the original: :class:`PositionMap` maps its offsets back so that
compile errors point into what the author wrote.
"""

from __future__ import annotations

import bisect
import datetime
import re
from dataclasses import dataclass, field
from typing import Any

from dra.cel.costs import RANK, Edit
from dra.cel.errors import CelRuntimeError
from dra.cel.syntax import Call, Ident, Node, Select, children

__all__ = [
    "CHECKING_DECLARATIONS",
    "ComprehensionError",
    "PositionMap",
    "apply_edits",
    "comprehension_edits",
    "is_reserved",
    "transform_map",
    "transform_map_entries",
    "two_variable_arity",
]

# macro → the argument counts of its two-variable form
_TWO_VARIABLE = {
    "all": (3,),
    "exists": (3,),
    "existsOne": (3,),
    "exists_one": (3,),
    "transformList": (3, 4),
    "transformMap": (3, 4),
    "transformMapEntry": (3, 4),
}
_ACCUMULATOR_NAMES = ("__result__", "@result")
_BOUND = re.compile(r"dra_c\d+")
_DECLARED = frozenset({"dra_range", "dra_keys", "dra_tmap", "dra_tmapentry"})


class ComprehensionError(ValueError):
    """A two-variable comprehension upstream's macro refuses (a compile error at ``position``)."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


def two_variable_arity(node: Node) -> bool:
    """Whether ``node`` is a call upstream expands as a two-variable comprehension."""
    return (
        isinstance(node, Call)
        and node.target is not None
        and len(node.args) in _TWO_VARIABLE.get(node.function, ())
    )


def is_reserved(name: str) -> bool:
    """Names the rewrite introduces; a selector using them does not compile."""
    return name in _DECLARED or _BOUND.fullmatch(name) is not None


def _param(name: str) -> str:
    return f"{{type_name: {name}, is_type_param: true}}"


def _list(element: str) -> str:
    return f"{{type_name: list, params: [{element}]}}"


def _map(key: str, value: str) -> str:
    return f"{{type_name: map, params: [{key}, {value}]}}"


_A, _K, _V = _param("A"), _param("K"), _param("V")
_INT = "{type_name: int}"
# YAML for the checking environment: the key list of a range, and the results of the map
# builders with upstream's types (no implementations: the evaluated text does not call them).
CHECKING_DECLARATIONS = (
    "  - name: dra_range\n    overloads:\n"
    f"      - id: dra_range_list\n        args: [{_list(_A)}]\n        return: {_list(_A)}\n"
    f"      - id: dra_range_map\n        args: [{_map(_K, _V)}]\n        return: {_map(_K, _V)}\n"
    "  - name: dra_keys\n    overloads:\n"
    f"      - id: dra_keys_list\n        args: [{_list(_A)}]\n        return: {_list(_INT)}\n"
    f"      - id: dra_keys_map\n        args: [{_map(_K, _V)}]\n        return: {_list(_K)}\n"
    "  - name: dra_tmap\n    overloads:\n"
    f"      - id: dra_tmap_list_list\n        args: [{_list(_K)}, {_list(_V)}]\n"
    f"        return: {_map(_K, _V)}\n"
    "  - name: dra_tmapentry\n    overloads:\n"
    f"      - id: dra_tmapentry_list\n        args: [{_list(_map(_K, _V))}]\n"
    f"        return: {_map(_K, _V)}\n"
)


# --- runtime (evaluated text) ------------------------------------------------------------------


_UNSUPPORTED = (datetime.timedelta, datetime.datetime)


def _check_returnable(value: Any) -> None:
    """cel-expr-python cannot hand a duration or timestamp inside a map back to CEL: say so
    (a known difference) instead of failing with the binding's message."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _UNSUPPORTED):
            raise CelRuntimeError(
                "transformMap/transformMapEntry results holding durations or timestamps are "
                "not supported by this evaluator"
            )
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())


def _key(value: Any) -> tuple[str, Any]:
    # CEL map keys: bool, int, uint, string; int and uint keys of equal value are one key.
    return ("bool" if isinstance(value, bool) else type(value).__name__, value)


def _build(pairs: list[tuple[Any, Any]], duplicate_is_error: bool) -> dict[Any, Any]:
    result: dict[Any, Any] = {}
    seen: set[tuple[str, Any]] = set()
    for key, value in pairs:
        marker = _key(key)
        if marker in seen:
            if duplicate_is_error:
                text = ("true" if key else "false") if isinstance(key, bool) else key
                raise CelRuntimeError(f"insert failed: key {text} already exists")
            continue
        if key in result:  # a bool and an int key Python cannot keep apart
            raise CelRuntimeError("map keys true/false and 1/0 together are not supported")
        seen.add(marker)
        _check_returnable(value)
        result[key] = value
    return result


def transform_map(pairs: list[list[Any]]) -> dict[Any, Any]:
    """``transformMap``: ``[key, value]`` pairs (distinct keys: those of the range) to a map."""
    return _build([(pair[0], pair[1]) for pair in pairs], duplicate_is_error=False)


def transform_map_entries(entries: list[dict[Any, Any]]) -> dict[Any, Any]:
    """``transformMapEntry``: the merge of the entries, with upstream's duplicate-key error."""
    return _build([item for entry in entries for item in entry.items()], duplicate_is_error=True)


# --- the rewrite -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Rewrite:
    text: str
    checked: list[Edit] = field(default_factory=list)
    evaluated: list[Edit] = field(default_factory=list)
    names: int = 0

    def both(self, start: int, end: int, checked: str, evaluated: str, rank: int = 0) -> None:
        self.checked.append((start, end, checked, rank))
        self.evaluated.append((start, end, evaluated, rank))


def _variable(node: Node) -> str:
    if not isinstance(node, Ident):
        # cel-go reports a field selection at its dot
        position = node.dot if isinstance(node, Select) else node.start
        raise ComprehensionError("argument must be a simple name", position)
    return node.name


def _rewrite(rewrite: _Rewrite, node: Call, depth: int) -> None:
    assert node.target is not None
    args = node.args
    first, second = _variable(args[0]), _variable(args[1])
    if first == second:
        raise ComprehensionError(f"duplicate variable name: {first}", args[1].start)
    for argument, name in ((args[0], first), (args[1], second)):
        if name in _ACCUMULATOR_NAMES:
            raise ComprehensionError(
                "iteration variable overwrites accumulator variable", argument.start
            )
    rewrite.names += 1
    bound = f"dra_c{rewrite.names}"
    value = f"cel.bind({second}, {bound}[{first}], "
    checked_keys = f"dra_keys({bound})"
    evaluated_keys = f"(type({bound}) == list ? dyn(lists.range({bound}.size())) : dyn({bound}))"
    function = node.function
    body = args[2:]
    # cel.bind(bound, <target>, <keys>.<macro>(first, cel.bind(second, bound[first], <body>)))
    # The checked range goes through dra_range, which only lists and maps (and dyn) pass.
    # Rank 2·depth + 1: inside any cost wrap of this call (2·depth), outside its target's.
    start = node.target.start
    rewrite.checked.append((start, start, f"cel.bind({bound}, dra_range(", 2 * depth + 1 - RANK))
    rewrite.evaluated.append((start, start, f"cel.bind({bound}, ", 2 * depth + 1 - RANK))
    if function in ("all", "exists", "existsOne", "exists_one"):
        macro = "exists_one" if function == "existsOne" else function
        head_checked = f", {checked_keys}.{macro}({first}, {value}"
        head_evaluated = f", {evaluated_keys}.{macro}({first}, {value}"
        tail = ")))"
        middle_checked = middle_evaluated = ""
    elif function == "transformList":
        head_checked = f", {checked_keys}.map({first}, {value}"
        head_evaluated = f", {evaluated_keys}.map({first}, {value}"
        middle_checked = middle_evaluated = f"), {value}"
        tail = ")))"
    elif function == "transformMap":
        head_checked = f", dra_tmap({checked_keys}, {checked_keys}.map({first}, {value}"
        head_evaluated = f", dra_tmap_eval({evaluated_keys}.map({first}, "
        if len(body) == 1:
            head_evaluated += f"[{first}, {value}"
        else:
            head_evaluated += value
        middle_checked = f"), {value}"
        middle_evaluated = f"), [{first}, {value}"
        tail = "))))"
        rewrite.both(body[-1].end, node.end, tail, ")])))")
    else:  # transformMapEntry
        head_checked = f", dra_tmapentry({checked_keys}.map({first}, {value}"
        head_evaluated = f", dra_tmapentry_eval({evaluated_keys}.map({first}, {value}"
        middle_checked = middle_evaluated = f"), {value}"
        tail = "))))"
    rewrite.both(node.target.end, body[0].start, ")" + head_checked, head_evaluated)
    if len(body) == 2:
        rewrite.both(body[0].end, body[1].start, middle_checked, middle_evaluated)
    if function != "transformMap":
        rewrite.both(body[-1].end, node.end, tail, tail)


def _unwrap(rewrite: _Rewrite, node: Call) -> None:
    """The optional library's ``optional.unwrap(l)`` / ``l.unwrapOpt()`` (version 2, which
    cel-cpp lacks): the values of the list's present optionals, in order."""
    rewrite.names += 1
    bound = f"dra_c{rewrite.names}"
    keep = f".filter({bound}, {bound}.hasValue()).map({bound}, {bound}.value())"
    if node.args:  # optional.unwrap(l)
        listed = node.args[0]
        rewrite.both(node.start, listed.start, "(", "(")
        rewrite.both(listed.end, node.end, ")" + keep, ")" + keep)
    else:  # l.unwrapOpt()
        assert node.target is not None
        rewrite.both(node.target.end, node.end, keep, keep)


def _is_unwrap(node: Call) -> bool:
    target = node.target
    if node.function == "unwrap" and len(node.args) == 1:
        return isinstance(target, Ident) and target.name == "optional"
    return node.function == "unwrapOpt" and target is not None and not node.args


def comprehension_edits(text: str, tree: Node) -> tuple[list[Edit], list[Edit]]:
    """(checked, evaluated) edits for the two-variable comprehensions and the optional
    library's ``unwrap`` of a parsed expression; raises :class:`ComprehensionError` where
    upstream's macro refuses (and for the one-variable ``existsOne``, which upstream lacks)."""
    rewrite = _Rewrite(text)
    stack: list[tuple[Node, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        stack.extend((child, depth + 1) for child in children(node))
        if not isinstance(node, Call):
            continue
        if two_variable_arity(node):
            _rewrite(rewrite, node, depth)
        elif node.target is not None and node.function == "existsOne" and len(node.args) == 2:
            # cel-go has only ``exists_one`` for one variable: ``existsOne`` is a function
            # nobody declared, reported at its opening parenthesis (cel-cpp would name the
            # loop variable instead).
            name = text.index("existsOne", node.target.end)
            raise ComprehensionError(
                "undeclared reference to 'existsOne' (in container '')",
                text.index("(", name + len("existsOne")),
            )
        elif _is_unwrap(node):
            _unwrap(rewrite, node)
    return rewrite.checked, rewrite.evaluated


# --- positions ---------------------------------------------------------------------------------


@dataclass(slots=True)
class PositionMap:
    """Offsets of a rewritten text mapped back to the original's (inserted text maps to where
    the original resumes)."""

    # (start in the rewritten text, start in the original, length) of each copied span
    spans: list[tuple[int, int, int]] = field(default_factory=list)

    def original(self, offset: int) -> int:
        index = bisect.bisect_right([span[0] for span in self.spans], offset) - 1
        if index < 0:
            return self.spans[0][1] if self.spans else 0
        start, original, length = self.spans[index]
        if offset < start + length:
            return original + offset - start
        if index + 1 < len(self.spans):
            return self.spans[index + 1][1]
        return original + length


def apply_edits(text: str, edits: list[Edit]) -> tuple[str, PositionMap]:
    """Apply non-overlapping edits as :func:`dra.cel.reads` does (zero-width inserts at one
    position in rank order, before a replacement starting there), keeping a position map."""
    pieces: list[str] = []
    positions = PositionMap()
    cursor = 0
    length = 0
    for start, end, replacement, _ in sorted(edits, key=lambda edit: (edit[0], edit[1], edit[3])):
        if start > cursor:
            positions.spans.append((length, cursor, start - cursor))
            pieces.append(text[cursor:start])
            length += start - cursor
        pieces.append(replacement)
        length += len(replacement)
        cursor = max(cursor, end)
    if cursor < len(text):
        positions.spans.append((length, cursor, len(text) - cursor))
        pieces.append(text[cursor:])
    return "".join(pieces), positions
