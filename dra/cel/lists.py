"""Kubernetes' ``lists`` library (``k8s.io/apiserver/pkg/cel/library/lists.go``) on cel-cpp.

``isSorted()``, ``sum()``, ``min()``, ``max()``, ``indexOf(x)`` and ``lastIndexOf(x)`` on lists,
with upstream's rules: ``min``/``max``/``isSorted`` on lists of comparable types (int, uint,
double, bool, duration, timestamp, string, bytes), ``sum`` on int, uint, double and duration
lists, ``min``/``max`` of an empty list are runtime errors, ``indexOf`` compares with CEL's
equality (``[1].indexOf(1.0) == 0``).

Two things of cel-cpp shape how they are wired (declarations live with the environment):

* a Python implementation's result is converted by its declared type, and it receives ``uint``
  elements as plain ints, so a function returning an element would lose ``uint`` (and cannot
  return a duration as ``dyn``). ``l.min()`` is therefore evaluated as
  ``cel.bind(v, l, v[dra_list_min(v)])`` (Python finds the index, CEL picks the element, which
  keeps its type) and ``l.sum()`` picks a typed implementation by the first element's type;
* the ``strings`` extension already declares ``indexOf``/``lastIndexOf`` and cel-cpp refuses a
  second declaration, so member calls of both are renamed (same length, in the checked and the
  evaluated text) to :data:`RENAMED` aliases declared with the string and the list overloads.

Every function charges Kubernetes' cost of one traversal of its receiver (``traversalCost``).
"""

from __future__ import annotations

import datetime
import math
from typing import Any

from dra.cel import strings
from dra.cel.call_costs import traversal_cost
from dra.cel.costs import RANK, Edit, charge
from dra.cel.errors import CelRuntimeError
from dra.cel.syntax import Call, Ident, Node, children

__all__ = [
    "INDEX_RENAMED",
    "RANGE_ALIAS",
    "RENAMED",
    "cel_equal",
    "index_of",
    "is_sorted",
    "last_index_of",
    "list_edits",
    "lists_range",
    "range_edits",
    "maximum_index",
    "minimum_index",
    "string_index_of",
    "string_last_index_of",
    "sum_values",
]

# member function → the same-length alias it is declared under (see module doc)
INDEX_RENAMED = {"indexOf": "dra_idx", "lastIndexOf": "dra_lastidx"}
# every renamed member call: these and the strings extension's (dra.cel.strings)
RENAMED = {**INDEX_RENAMED, **strings.RENAMED}
# ``lists.range(n)`` in the evaluated text (never the checked one: types and compile errors
# stay cel-cpp's declaration's): cel-cpp's reserves n elements first and fails in C++ on a
# negative n, where cel-go's counts up to n and answers an empty list.
RANGE_ALIAS = "dra_lrange"
_INT_RANGE = (-(2**63), 2**63 - 1)
_UINT_MAX = 2**64 - 1
_DURATION_LIMIT = datetime.timedelta(microseconds=(2**63 - 1) // 1000)


def _category(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes | bytearray):
        return "bytes"
    if isinstance(value, datetime.timedelta):
        return "duration"
    if isinstance(value, datetime.datetime):
        return "timestamp"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


def cel_equal(left: Any, right: Any) -> bool:
    """CEL's equality: numbers compare across int/uint/double, other types never equal."""
    kind = _category(left)
    if kind != _category(right):
        return False
    if kind == "list":
        return len(left) == len(right) and all(map(cel_equal, left, right))
    if kind == "map":
        if len(left) != len(right):
            return False
        for key, value in left.items():
            match = [other for other in right if cel_equal(key, other)]
            if not match or not cel_equal(value, right[match[0]]):
                return False
        return True
    return bool(left == right)


def _compare(left: Any, right: Any) -> int | None:
    """-1/0/1, or None where CEL's ``Compare`` is an error (NaN, different types)."""
    kind = _category(left)
    if kind != _category(right) or kind in ("list", "map"):
        return None
    if kind == "number" and (
        (isinstance(left, float) and math.isnan(left))
        or (isinstance(right, float) and math.isnan(right))
    ):
        return None
    if kind == "bytes":
        left, right = bytes(left), bytes(right)
    return -1 if left < right else (1 if left > right else 0)


def _comparable(values: list[Any], function: str) -> None:
    charge(traversal_cost(values))
    for value in values:
        if _category(value) in ("list", "map", "NoneType"):
            raise CelRuntimeError(f"no such overload: {function}")


def is_sorted(values: list[Any]) -> bool:
    _comparable(values, "isSorted")
    return all(_compare(values[i - 1], values[i]) != 1 for i in range(1, len(values)))


def _extreme_index(values: list[Any], function: str, replace_when: int) -> int:
    _comparable(values, function)
    if not values:
        raise CelRuntimeError(f"{function} called on empty list")
    best = 0
    for index in range(1, len(values)):
        if _compare(values[best], values[index]) == replace_when:
            best = index
    return best


def minimum_index(values: list[Any]) -> int:
    """The index of the first smallest element (upstream keeps the first of equals)."""
    return _extreme_index(values, "min", 1)


def maximum_index(values: list[Any]) -> int:
    return _extreme_index(values, "max", -1)


def sum_values(values: list[Any], unsigned: bool = False) -> Any:
    """The sum of a non-empty int, uint, double or duration list, with CEL's overflow errors."""
    charge(traversal_cost(values))
    first = _category(values[0]) if values else "number"
    if first == "duration" and all(_category(value) == "duration" for value in values):
        total = datetime.timedelta()
        for value in values:
            total += value
            if abs(total) > _DURATION_LIMIT:
                raise CelRuntimeError("integer overflow")
        return total
    if all(isinstance(value, float) for value in values):
        return _float_sum(values)
    if all(isinstance(value, int) and not isinstance(value, bool) for value in values):
        result = 0
        for value in values:
            result += value
            if unsigned and not 0 <= result <= _UINT_MAX:
                raise CelRuntimeError("unsigned integer overflow")
            if not unsigned and not _INT_RANGE[0] <= result <= _INT_RANGE[1]:
                raise CelRuntimeError("integer overflow")
        return result
    raise CelRuntimeError("no such overload: sum")


def _float_sum(values: list[float]) -> float:
    total = 0.0
    for value in values:
        total += value  # in order, as Go adds: no compensated summation
    return total


def index_of(values: list[Any], item: Any) -> int:
    charge(traversal_cost(values))
    return next((i for i, value in enumerate(values) if cel_equal(value, item)), -1)


def last_index_of(values: list[Any], item: Any) -> int:
    charge(traversal_cost(values))
    return next(
        (i for i in range(len(values) - 1, -1, -1) if cel_equal(values[i], item)),
        -1,
    )


# The string overloads of the renamed functions, as cel-go's strings extension defines them
# (indices are in code points; a negative offset is an error, one past the end finds nothing).
# ``lists_range`` first: cel-go's ``lists.range``, evaluated in place of cel-cpp's.


def lists_range(size: int) -> list[int]:
    """cel-go's ``lists.range``: 0, 1, … up to ``size`` (none for a size of 0 or below). The
    meter has charged for the list before it is built."""
    return list(range(size)) if size > 0 else []


def string_index_of(text: str, part: str, offset: int = 0) -> int:
    """cel-go's strings extension (``indexOfOffset``): an empty part is found at the offset
    whatever it is, a negative offset is an error, one at or past the end finds nothing."""
    charge(traversal_cost(text))
    if part == "":
        return offset
    if offset < 0:
        raise CelRuntimeError(f"index out of range: {offset}")
    if offset >= len(text):
        return -1
    return text.find(part, offset)


def string_last_index_of(text: str, part: str, offset: int | None = None) -> int:
    """cel-go's ``lastIndexOf``/``lastIndexOfOffset``: without an offset, from the last
    character (an empty part is found at the end, a part longer than the text nowhere); a
    negative offset is an error, one at or past the end finds nothing."""
    charge(traversal_cost(text))
    if offset is None:
        if part == "":
            return len(text)
        if len(text.encode()) < len(part.encode()):  # Go compares byte lengths here
            return -1
        offset = len(text) - 1
    if part == "":
        return offset
    if offset < 0:
        raise CelRuntimeError(f"index out of range: {offset}")
    if offset >= len(text):
        return -1
    return text.rfind(part, 0, offset + len(part))


# --- the evaluated text ------------------------------------------------------------------------

_SUM = (
    "{v}.size() == 0 ? dyn(0) : type({v}[0]) == uint ? dra_list_sum_uint({v}) : "
    "type({v}[0]) == google.protobuf.Duration ? dra_list_sum_duration({v}) : dra_list_sum({v})"
)


def range_edits(text: str, tree: Node) -> list[Edit]:
    """``lists.range(…)`` → ``dra_lrange(…)`` (:func:`lists_range`) for every such call in
    ``tree``. A variable named ``lists`` does not shadow it: CEL resolves a namespaced function
    first (cel-cpp did so here too)."""
    edits: list[Edit] = []
    if "range" not in text:
        return edits
    stack: list[Node] = [tree]
    while stack:
        node = stack.pop()
        stack.extend(children(node))
        if isinstance(node, Call) and node.function == "range":
            target = node.target
            if isinstance(target, Ident) and target.name == "lists":
                edits.append((target.start, text.index("(", target.end), RANGE_ALIAS, 0))
    return edits


def list_edits(text: str, tree: Node) -> list[Edit]:
    """Edits of the evaluated text: ``l.min()``/``l.max()``/``l.sum()`` become typed picks."""
    edits: list[Edit] = []
    names = 0
    stack: list[tuple[Node, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        stack.extend((child, depth + 1) for child in children(node))
        if not (isinstance(node, Call) and node.target is not None and not node.args):
            continue
        if node.function not in ("min", "max", "sum"):
            continue
        names += 1
        name = f"dra_list_{names}"
        if node.function == "sum":
            result = _SUM.format(v=name)
        else:
            result = f"{name}[dra_list_{node.function}({name})]"
        # Just inside any cost wrap of this call (2·depth), outside those of its target.
        edits.append((node.start, node.start, f"cel.bind({name}, ", 2 * depth + 1 - RANK))
        edits.append((node.target.end, node.end, f", {result})", 0))
    return edits
