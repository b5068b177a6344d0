"""The evaluation cost limit of DRA selectors, which cel-cpp does not track by itself.

Kubernetes evaluates a selector with a cost limit of 1,000,000 (``CELSelectorExpressionMaxCost``)
where list and string operations cost by the size of what they handle, and cancels the
evaluation with "operation cancelled: actual cost limit exceeded". cel-cpp only counts
comprehension iterations (10,000 per evaluation), so a selector under 100 characters could
materialize gigabytes (``lists.range(100000000)``, chained ``replace``, ``s + s`` doubled through
``cel.bind``) or run for seconds (``sets.contains`` of two long lists, ``map`` over a long list,
whose accumulator cel-cpp copies on every step).

:func:`cost_edits` rewrites the *evaluated* text (never the checked one, so compile errors and
types stay those of the original) so the operations that grow values or take more than linear
time first charge their cost to a per-evaluation meter:

* ``lists.range(n)`` charges ``n`` before the list exists, and ``s.replace(a, b)`` (done here)
  charges the length of its result before building it;
* ``+`` (unless an operand is a number literal), ``join``, ``format``, ``strings.quote``,
  ``flatten`` charge the size of their result, which is at most a few times the size of values
  already charged, so memory stays bounded;
* comprehensions charge the size of their range on entry (``map``/``filter``: its square, the
  cel-cpp accumulator cost), ``sets.*`` the product of both sizes.

Charges add up per evaluation; over :data:`COST_LIMIT` the evaluation fails with upstream's
message whatever ``||``/``&&`` would make of the error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dra.cel.syntax import Call, Ident, Literal, Node, Operator, children

__all__ = [
    "COST_LIMIT",
    "COST_LIMIT_MESSAGE",
    "RANK",
    "CostLimitExceeded",
    "INTERNAL_FUNCTIONS",
    "Edit",
    "charge",
    "cost_edits",
    "cost_exceeded",
    "reset_cost",
]

COST_LIMIT = 1_000_000
COST_LIMIT_MESSAGE = "operation cancelled: actual cost limit exceeded"

# (start, end, replacement, rank): rank orders zero-width inserts at one position (lower first).
Edit = tuple[int, int, str, int]

_ACCUMULATING = frozenset({"map", "filter", "transformList", "transformMap", "transformMapEntry"})
_ITERATING = frozenset({"all", "exists", "exists_one", "existsOne"}) | _ACCUMULATING
_GROWING = frozenset({"join", "format", "flatten"})
_SETS = frozenset({"contains", "equivalent", "intersects"})
# Zero-width inserts at one position: outer nodes first. A node at depth d ranks 2·d, so other
# rewrites can slot in between a node and its children (2·d + 1).
RANK = 1000  # above twice any tree depth (MAX_NESTING)


class CostLimitExceeded(ValueError):
    """Raised inside an evaluation when the meter passes :data:`COST_LIMIT`."""

    def __init__(self) -> None:
        super().__init__(COST_LIMIT_MESSAGE)


class _Meter(threading.local):
    spent = 0
    exceeded = False


_meter = _Meter()


def reset_cost() -> None:
    """Start metering a new evaluation (on this thread)."""
    _meter.spent = 0
    _meter.exceeded = False


def cost_exceeded() -> bool:
    """Whether the evaluation just run passed the limit (errors may have been absorbed)."""
    return _meter.exceeded


def charge(amount: int) -> None:
    """Charge ``amount`` to the evaluation running on this thread (library functions)."""
    _meter.spent += max(amount, 0)
    if _meter.spent > COST_LIMIT:
        _meter.exceeded = True
        raise CostLimitExceeded


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str | bytes | list | dict) else 1


def charge_range(count: int) -> int:
    charge(count)
    return count


def charge_size(value: Any) -> bool:
    charge(_size(value))
    return True


def charge_iteration(size: int, accumulating: bool) -> bool:
    charge(size * size if accumulating else size)
    return True


def charge_pair(left: int, right: int) -> bool:
    charge(max(left, 1) * max(right, 1))
    return True


def replace(text: str, old: str, new: str, limit: int = -1) -> str:
    """``strings.replace`` (Go's ``strings.Replace``), charged by its result before building it."""
    count = len(text) + 1 if old == "" else text.count(old)
    if limit >= 0:
        count = min(count, limit)
    charge(len(text) + count * (len(new) - len(old)))
    return text.replace(old, new, limit)


# name → implementation; their declarations live with the environment (evaluation only).
INTERNAL_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "dra_cost_range": charge_range,
    "dra_cost_size": charge_size,
    "dra_cost_iteration": charge_iteration,
    "dra_cost_pair": charge_pair,
    "dra_cost_replace": replace,
}


@dataclass(slots=True)
class _Rewrite:
    text: str
    edits: list[Edit]
    names: int = 0

    def name(self) -> str:
        self.names += 1
        return f"dra_cost_{self.names}"

    def wrap(self, node: Node, depth: int, prefix: str, suffix: str) -> None:
        self.edits.append((node.start, node.start, prefix, 2 * depth - RANK))
        self.edits.append((node.end, node.end, suffix, RANK - 2 * depth))

    def bind_check(self, node: Node, depth: int, check: Callable[[str], str]) -> None:
        """``cel.bind(v, node, check(v) ? v : v)``: the value and its type are kept."""
        name = self.name()
        self.wrap(node, depth, f"cel.bind({name}, ", f", {check(name)} ? {name} : {name})")


def _is_number(node: Node) -> bool:
    if isinstance(node, Operator) and node.operator in ("-", "()") and len(node.operands) == 1:
        return _is_number(node.operands[0])
    return isinstance(node, Literal) and node.kind in ("int", "uint", "double")


def _visit(rewrite: _Rewrite, node: Node, depth: int) -> None:
    if isinstance(node, Call) and node.target is None and node.function == "has":
        return  # has(a.b) is rewritten as a whole by the read analysis; nothing grows in it
    for child in children(node):
        _visit(rewrite, child, depth + 1)
    if isinstance(node, Operator) and node.operator == "+" and len(node.operands) == 2:
        if not any(_is_number(operand) for operand in node.operands):
            rewrite.bind_check(node, depth, lambda name: f"dra_cost_size({name})")
        return
    if not isinstance(node, Call):
        return
    target, function, args = node.target, node.function, node.args
    namespace = target.name if isinstance(target, Ident) else None
    if namespace == "lists" and function == "range" and len(args) == 1:
        rewrite.wrap(args[0], depth + 1, "dra_cost_range(", ")")
    elif namespace == "sets" and function in _SETS and len(args) == 2:
        first, second = rewrite.name(), rewrite.name()
        rewrite.edits.append((node.start, args[0].start, f"cel.bind({first}, ", 0))
        rewrite.edits.append((args[0].end, args[1].start, f", cel.bind({second}, ", 0))
        rewrite.edits.append(
            (
                args[1].end,
                node.end,
                f", dra_cost_pair({first}.size(), {second}.size()) ? "
                f"sets.{function}({first}, {second}) : false))",
                0,
            )
        )
    elif namespace == "strings" and function == "quote" and len(args) == 1:
        rewrite.bind_check(node, depth, lambda name: f"dra_cost_size({name})")
    elif target is not None and namespace is None and function == "replace" and 2 <= len(args) <= 3:
        rewrite.edits.append((target.start, target.start, "dra_cost_replace(", 2 * depth - RANK))
        rewrite.edits.append((target.end, args[0].start, ", ", 0))
    elif target is not None and function in _ITERATING and len(args) >= 2:
        accumulating = "true" if function in _ACCUMULATING else "false"
        rewrite.bind_check(
            target,
            depth + 1,
            lambda name: f"dra_cost_iteration({name}.size(), {accumulating})",
        )
    elif target is not None and function in _GROWING:
        rewrite.bind_check(node, depth, lambda name: f"dra_cost_size({name})")


def cost_edits(text: str, tree: Node) -> list[Edit]:
    """The edits that meter the costly operations of a parsed expression (see module doc)."""
    rewrite = _Rewrite(text, [])
    _visit(rewrite, tree, 1)
    return rewrite.edits
