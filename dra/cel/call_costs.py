"""Upstream's cost of one call, by function, as cel-go's actual-cost tracker computes it for DRA.

Sources: cel-go's default ``CostTracker.costCall`` (``interpreter/runtimecost.go``), the overload
trackers of its ``ext/lists.go`` and ``ext/sets.go``, and Kubernetes'
``library.CostEstimator.CallCost`` (``apiserver/pkg/cel/library/cost.go``), which Kubernetes
installs for every base environment (``StrictCostOpt``). Sizes are cel-go's: code points of a
string, bytes, elements of a list or map, 1 for anything else; factors are applied in float64
and rounded as Go does. :mod:`dra.cel.costs` charges them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = [
    "CALL_COSTS",
    "MAX_LIST_SIZE",
    "MAX_VALUE_SIZE",
    "TOO_LARGE",
    "call_cost",
    "traversal_cost",
]

# cel-go common/cost.go
_STRING_TRAVERSAL = 0.1  # StringTraversalCostFactor
_REGEX_LENGTH = 0.25  # RegexStringLengthCostFactor
_LIST_CREATE = 10  # ListCreateBaseCost
# Results past this many characters or elements are refused before they are built (a string
# replace can multiply its input by the replacement's length while upstream charges only the
# input): upstream would try to allocate the gigabytes; here it is the cost error.
MAX_VALUE_SIZE = 50_000_000
MAX_LIST_SIZE = 2_000_000  # the same for a list flatten() would build
TOO_LARGE = 2**63  # a cost past any limit


def _size(value: Any) -> int:
    """cel-go's ``actualSize``: code points of a string, length of bytes, lists and maps, else 1."""
    if isinstance(value, str | bytes | bytearray | list | tuple | dict):
        return len(value)
    return 1


def _scaled(size: float, factor: float) -> int:
    """``uint64(math.Ceil(float64(size) * factor))`` (float arithmetic, as Go does it)."""
    return math.ceil(size * factor)


def traversal_cost(value: Any) -> int:
    """Kubernetes' ``traversalCost``: strings and bytes by UTF-8 byte × 0.1 rounded *down*,
    lists and maps by the sum over elements (keys and values), anything else 1."""
    if isinstance(value, str):
        return int(len(value.encode()) * _STRING_TRAVERSAL)
    if isinstance(value, bytes | bytearray):
        return int(len(value) * _STRING_TRAVERSAL)
    if isinstance(value, list | tuple):
        return sum(traversal_cost(item) for item in value)
    if isinstance(value, dict):
        return sum(traversal_cost(key) + traversal_cost(item) for key, item in value.items())
    return 1


def _is_text(value: Any) -> bool:
    return isinstance(value, str | bytes | bytearray)


def _string_scan(args: list[Any]) -> int:
    return _scaled(_size(args[0]), _STRING_TRAVERSAL)


def _string_rebuild(args: list[Any]) -> int:
    return math.ceil(_size(args[0]) * 2 * _STRING_TRAVERSAL)


def _equality(args: list[Any]) -> int:
    return _scaled(min(_size(args[0]), _size(args[1])), _STRING_TRAVERSAL)


def _ordering(args: list[Any]) -> int:
    left, right = args
    if (isinstance(left, str) and isinstance(right, str)) or (
        isinstance(left, bytes | bytearray) and isinstance(right, bytes | bytearray)
    ):
        return _equality(args)
    return 1


def _addition(args: list[Any]) -> int:
    left, right = args
    if (isinstance(left, str) and isinstance(right, str)) or (
        isinstance(left, bytes | bytearray) and isinstance(right, bytes | bytearray)
    ):
        size = _size(left) + _size(right)
        if size > MAX_VALUE_SIZE:
            return TOO_LARGE
        return _scaled(size, _STRING_TRAVERSAL)
    return 1


def _membership(args: list[Any]) -> int:
    return _size(args[1]) if isinstance(args[1], list | tuple) else 1


def _regex(args: list[Any]) -> int:
    text = _scaled(1.0 + _size(args[0]), _STRING_TRAVERSAL)
    return text * _scaled(_size(args[1]), _REGEX_LENGTH)


def _substring(args: list[Any]) -> int:
    return _scaled(_size(args[0]), _STRING_TRAVERSAL) * _scaled(_size(args[1]), _STRING_TRAVERSAL)


def _conversion(args: list[Any], name: str) -> int:
    text = args[0] if args else None
    if (name == "string" and isinstance(text, bytes | bytearray)) or (
        name == "bytes" and isinstance(text, str)
    ):
        return _scaled(_size(text), _STRING_TRAVERSAL)
    return 1


def _join(args: list[Any]) -> int:
    items = args[0] if isinstance(args[0], list | tuple) else []
    separator = _size(args[1]) if len(args) > 1 else 0
    size = sum(_size(item) for item in items) + separator * max(len(items) - 1, 0)
    if size > MAX_VALUE_SIZE:
        return TOO_LARGE
    return math.ceil(size * 2 * _STRING_TRAVERSAL)


def _allocating_list(factor: float, size: int) -> int:
    """cel-go ext/lists.go ``trackAllocatingListCall``."""
    return int(size * factor) + 1 + _LIST_CREATE


def _range(args: list[Any]) -> int:
    count = args[0] if isinstance(args[0], int) else 0
    return _allocating_list(1, max(count, 0))


def _slice(args: list[Any]) -> int:
    start, end = args[1], args[2]
    size = end - start if isinstance(start, int) and isinstance(end, int) and end > start else 0
    return _allocating_list(1, size)


def _flattened_size(values: Any, depth: int) -> int:
    if not isinstance(values, list | tuple):
        return 1
    if depth <= 0:
        return len(values)
    return sum(_flattened_size(item, depth - 1) for item in values)


def _flatten(args: list[Any]) -> int:
    depth = args[1] if len(args) == 2 else 1
    if _flattened_size(args[0], min(depth, 32)) > MAX_LIST_SIZE:
        return TOO_LARGE  # upstream charges the outer size only and would build it
    return _allocating_list(float(depth), _size(args[0]))


def _self_compare(args: list[Any]) -> int:
    """cel-go ext/lists.go ``trackListSelfCompare`` (``sort``, ``distinct``)."""
    values = args[0] if isinstance(args[0], list | tuple) else []
    if not values:
        return _allocating_list(2.0, 0)
    factor = 2.0 + (_STRING_TRAVERSAL if _is_text(values[0]) else 0.0)
    return _allocating_list(factor, len(values) * len(values))


def _sets(factor: float) -> Callable[[list[Any]], int]:
    def cost(args: list[Any]) -> int:
        return 1 + int(float(_size(args[0]) * _size(args[1])) * factor)

    return cost


def _ip(args: list[Any]) -> int:
    # ``cidr.ip()`` (overload cidr_ip) is a field access: 1; ``ip(string)`` parses the string.
    return _scaled(_size(args[0]), _STRING_TRAVERSAL) if isinstance(args[0], str) else 1


def _contains_ip(args: list[Any]) -> int:
    cidr = _size(args[0])
    cost = _scaled(cidr + cidr, _STRING_TRAVERSAL)
    if isinstance(args[1], str):
        cost += _scaled(_size(args[1]), _STRING_TRAVERSAL)
    return cost


def _contains_cidr(args: list[Any]) -> int:
    cidr = _size(args[0])
    cost = _scaled(cidr + cidr, _STRING_TRAVERSAL) + _scaled(cidr, _STRING_TRAVERSAL) + 1
    if isinstance(args[1], str):
        cost += _scaled(_size(args[1]), _STRING_TRAVERSAL)
    return cost


def _traversal(args: list[Any]) -> int:
    return traversal_cost(args[0])


# Upstream's cost of one call, by function name (namespaced ones qualified, operators as cel-go
# names them): a rule takes the argument values, receiver first, as cel-go passes them. Sources:
# cel-go's default CostTracker.costCall, the ext/lists.go and ext/sets.go overload trackers and
# Kubernetes' library.CostEstimator.CallCost. A function not listed costs 1. A new library
# function whose upstream cost depends on its arguments adds its rule here (and to
# dra.cel.costs.HEAVY if it can multiply sizes), and is then charged wherever a metered
# selector calls it.
CALL_COSTS: dict[str, Callable[[list[Any]], int]] = {
    "_==_": _equality,
    "_!=_": _equality,
    "_<_": _ordering,
    "_<=_": _ordering,
    "_>_": _ordering,
    "_>=_": _ordering,
    "_+_": _addition,
    "@in": _membership,
    "contains": _substring,
    "startsWith": _string_scan,
    "endsWith": _string_scan,
    "matches": _regex,
    "find": _regex,
    "findAll": _regex,
    "string": lambda args: _conversion(args, "string"),
    "bytes": lambda args: _conversion(args, "bytes"),
    "format": _string_scan,
    "strings.quote": _string_scan,
    "url": _string_scan,
    "lowerAscii": _string_scan,
    "upperAscii": _string_scan,
    "substring": _string_scan,
    "trim": _string_scan,
    "jsonpatch.escapeKey": _string_scan,
    "replace": _string_rebuild,
    "split": _string_rebuild,
    "join": _join,
    "quantity": _string_scan,
    "isQuantity": _string_scan,
    "semver": _string_scan,
    "isSemver": _string_scan,
    "cidr": _string_scan,
    "isIP": _string_scan,
    "isCIDR": _string_scan,
    "ip": _ip,
    "ip.isCanonical": _string_rebuild,
    "containsIP": _contains_ip,
    "containsCIDR": _contains_cidr,
    "isSorted": _traversal,
    "sum": _traversal,
    "min": _traversal,
    "max": _traversal,
    "indexOf": _traversal,
    "lastIndexOf": _traversal,
    "lists.range": _range,
    "slice": _slice,
    "flatten": _flatten,
    "reverse": lambda args: _allocating_list(1, _size(args[0])),
    "distinct": _self_compare,
    "sort": _self_compare,
    "sets.contains": _sets(1),
    "sets.intersects": _sets(1),
    "sets.equivalent": _sets(2),
}


def call_cost(name: str, args: list[Any]) -> int:
    """Upstream's cost of calling ``name`` with these argument values (receiver first)."""
    rule = CALL_COSTS.get(name)
    return 1 if rule is None else rule(args)
