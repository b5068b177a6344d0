"""The runtime cost of DRA selectors, metered as cel-go's actual-cost tracker counts it.

Kubernetes evaluates a selector with a cost limit of 1,000,000 (``CELSelectorExpressionMaxCost``)
and cancels the evaluation past it with "operation cancelled: actual cost limit exceeded".
cel-cpp has no cost tracker, so :func:`cost_edits` rewrites the *evaluated* text (never the
checked one, so compile errors and types stay those of the original) to charge a
per-evaluation meter exactly what cel-go's ``interpreter/runtimecost.go`` would, in the
environment Kubernetes 1.34–1.36 build for DRA (``environment.MustBaseEnvSet`` with
``cel.OptOptimize``, ``PresenceTestHasCost(false)`` and ``library.CostEstimator`` as the
call-cost estimator):

* every identifier and every select/index step costs 1, constants 0, a list literal 10, a map
  literal 30, a message literal 40, ``&&``/``||``/``?:`` nothing of their own; a literal made
  only of constants, a type conversion of a constant and ``x in [constants]`` cost nothing
  (``OptOptimize`` folds them before the tracker sees them); a ternary branch that is an
  attribute (``c ? a.b : x``) does not pay for the attribute itself, only its qualifiers;
* a call costs 1 unless :data:`dra.cel.call_costs.CALL_COSTS` has a rule for its function,
  which computes the cost from the argument values (strings by code point × 0.1 rounded up,
  lists by element, …);
* a comprehension costs its range, 1 for the result (2 for ``exists_one``) and, per element,
  its loop condition and step as the macro expands them (``all``: 3, ``exists``: 4, ``map``:
  12, ``filter``: 13 when kept, ``exists_one``: 2 when true) plus its body; ``all``/``exists``
  pay the condition once more when they stop early, as cel-go's loop does.

Costs that do not depend on values are folded per *region* (the part of the tree evaluated
together: the whole expression, the right side of ``&&``/``||``, a ternary branch, a
comprehension body per element) and charged once when the region runs (the whole
expression's after the evaluation, :func:`settle`); calls whose cost depends on sizes charge
before they run, so values cannot grow past what the limit allows. Two rewrites are made
(:func:`meter_edits`): the evaluated one charges an upper bound with few calls (every branch,
every element's dearest path, one charge per loop); the exact one, run only when the bound
passes the limit, charges per region and element as above. An expression without
comprehensions or size-multiplying operations (:data:`HEAVY`) is not rewritten at all: its
cost is linear in the device values it reads and cannot come near the limit.

Functions implemented in Python (:data:`SELF_CHARGED`) charge their rule themselves.

Longer than the house's ~600 lines because it follows upstream cel-go's
``interpreter/runtimecost.go`` and ``checker/cost.go`` function by function.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from dra.cel.call_costs import CALL_COSTS, MAX_VALUE_SIZE, TOO_LARGE, call_cost
from dra.cel.syntax import Aggregate, Call, Ident, Index, Literal, Node, Operator, Select, parse

__all__ = [
    "COST_LIMIT",
    "COST_LIMIT_MESSAGE",
    "INTERNAL_FUNCTIONS",
    "RANK",
    "HEAVY",
    "ITERATION_BUDGET",
    "SELF_CHARGED",
    "CostLimitExceeded",
    "Edit",
    "apply_edits",
    "charge",
    "cost_edits",
    "cost_exceeded",
    "cost_spent",
    "meter_edits",
    "metered_text",
    "reset_cost",
    "settle",
]

COST_LIMIT = 1_000_000
COST_LIMIT_MESSAGE = "operation cancelled: actual cost limit exceeded"
# Zero-width inserts at one position: outer nodes first. A node at depth d ranks 2·d, so other
# rewrites can slot in between a node and its children (2·d + 1).
RANK = 1000  # above twice any tree depth (MAX_NESTING)

# (start, end, replacement, rank): rank orders zero-width inserts at one position (lower first).
Edit = tuple[int, int, str, int]

# cel-cpp stops an evaluation after this many comprehension iterations (9,999 run).
ITERATION_BUDGET = 10_000
# cel-go common/cost.go
_LIST_CREATE, _MAP_CREATE, _STRUCT_CREATE = 10, 30, 40


class CostLimitExceeded(ValueError):
    """Raised inside an evaluation when the meter passes :data:`COST_LIMIT`."""

    def __init__(self) -> None:
        super().__init__(COST_LIMIT_MESSAGE)


class _Meter(threading.local):
    def __init__(self) -> None:
        self.spent = 0
        self.exceeded = False
        self.steps: dict[int, int] = {}


_meter = _Meter()


def reset_cost() -> None:
    """Start metering a new evaluation (on this thread)."""
    _meter.spent = 0
    _meter.exceeded = False
    _meter.steps.clear()


def cost_exceeded() -> bool:
    """Whether the evaluation just run passed the limit (errors may have been absorbed)."""
    return _meter.exceeded


def cost_spent() -> int:
    """The cost charged so far by the evaluation running (or just run) on this thread."""
    return _meter.spent


def charge(amount: int) -> None:
    """Charge ``amount`` to the evaluation running on this thread (library functions)."""
    _meter.spent += max(amount, 0)
    if _meter.spent > COST_LIMIT:
        _meter.exceeded = True
        raise CostLimitExceeded


# Implemented in Python, where they charge their rule themselves (never rewritten here).
SELF_CHARGED = frozenset(
    {"replace", "find", "findAll", "isSorted", "sum", "min", "max", "indexOf", "lastIndexOf"}
)
# Operations whose cost can multiply sizes: a selector using one is metered.
HEAVY = frozenset(
    {
        "contains", "matches", "find", "findAll", "format", "strings.quote", "replace", "split",
        "join", "lists.range", "slice", "flatten", "reverse", "distinct", "sort", "sortBy",
        "sets.contains", "sets.intersects", "sets.equivalent",
    }
)  # fmt: skip
_CONVERSIONS = frozenset(
    {"bool", "bytes", "double", "duration", "dyn", "int", "string", "timestamp", "type", "uint"}
)
_NAMESPACES = frozenset({"lists", "sets", "strings", "math", "optional", "ip", "jsonpatch"})
_OPERATORS = {"==": "_==_", "!=": "_!=_", "<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_"}
_TEXT = frozenset({"string", "bytes"})
# Comprehension macros: (per element before the body, per kept element, cost of the result).
_STOPPING = {"all": (3, 2), "exists": (4, 3)}  # (per element, the condition paid on stopping)
_ACCUMULATING = {"map": 12, "transformList": 12, "transformMap": 3, "transformMapEntry": 2}
_QUANTIFIERS = frozenset({"all", "exists", "exists_one", "existsOne"})


def _charge_call(name: str, args: list[Any]) -> bool:
    charge(call_cost(name, args))
    return True


def _charge_amount(amount: int) -> bool:
    charge(amount)
    return True


def _charge_times(count: int, amount: int) -> bool:
    charge(count * amount)
    return True


def _charge_loop(count: int, amount: int) -> bool:
    """A loop that cannot stop early: past cel-cpp's iteration budget it would fail anyway
    (after seconds of copying a map/filter accumulator), so it fails before it starts."""
    if count >= ITERATION_BUDGET:
        charge(TOO_LARGE)
    charge(count * amount)
    return True


def _charge_step(loop: int, amount: int) -> bool:
    _meter.steps[loop] = _meter.steps.get(loop, 0) + 1
    charge(amount)
    return True


def _enter_loop(loop: int, size: int) -> int:
    """Before ``all``/``exists`` runs (a loop that ended in an error left its count behind)."""
    _meter.steps[loop] = 0
    return size


def _charge_done(loop: int, size: int, condition: int, result: bool) -> bool:
    """After ``all``/``exists`` (their result passes through): cel-go evaluated the loop
    condition once more if the loop stopped early."""
    if _meter.steps.pop(loop, 0) < size:
        charge(condition)
    return result


def replace(text: str, old: str, new: str, limit: int = -1) -> str:
    """``strings.replace`` (Go's ``strings.Replace``), charged as upstream before building it."""
    charge(call_cost("replace", [text]))
    count = len(text) + 1 if old == "" else text.count(old)
    if limit >= 0:
        count = min(count, limit)
    if len(text) + count * (len(new) - len(old)) > MAX_VALUE_SIZE:
        charge(TOO_LARGE)
    return text.replace(old, new, limit)


# name → implementation; their declarations live with the environment (evaluation only).
INTERNAL_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "dra_cost_call": _charge_call,
    "dra_cost_add": _charge_amount,
    "dra_cost_times": _charge_times,
    "dra_cost_loop": _charge_loop,
    "dra_cost_step": _charge_step,
    "dra_cost_enter": _enter_loop,
    "dra_cost_done": _charge_done,
    "dra_cost_replace": replace,
}


# --- the rewrite -------------------------------------------------------------------------------


def _is_number(node: Node) -> bool:
    if isinstance(node, Operator) and node.operator in ("-", "()") and len(node.operands) == 1:
        return _is_number(node.operands[0])
    return isinstance(node, Literal) and node.kind in ("int", "uint", "double")


def _is_primitive(node: Node) -> bool:
    """A constant cel-go's set-membership optimization accepts (bytes are not hashable)."""
    if isinstance(node, Operator) and node.operator == "()":
        return _is_primitive(node.operands[0])
    return _is_number(node) or (
        isinstance(node, Literal) and node.kind in ("int", "uint", "double", "string", "bool")
    )


def _is_scalar_literal(node: Node) -> bool:
    return _is_number(node) or (isinstance(node, Literal) and node.kind in ("bool", "null"))


def _variables(function: str, args: list[Node]) -> int:
    """How many iteration variables a macro call declares (0: not a comprehension)."""
    count = (
        2
        if function.startswith("transform") or (function in _QUANTIFIERS and len(args) == 3)
        else 1
    )
    if not (function in _QUANTIFIERS or function in _ACCUMULATING or function == "filter"):
        return 0
    if len(args) < count + 1 or not all(isinstance(arg, Ident) for arg in args[:count]):
        return 0
    return count


_TYPE_NAMES = frozenset(
    {"bool", "bytes", "double", "int", "list", "map", "null_type", "string", "type", "uint"}
)


def _is_type(node: Node) -> bool:
    if isinstance(node, Ident):
        return node.name in _TYPE_NAMES
    return isinstance(node, Call) and node.target is None and node.function == "type"


def _is_attribute(node: Node) -> bool:
    return isinstance(node, Ident | Select | Index)


@dataclass(slots=True)
class _Metering:
    text: str
    optimized: bool
    exact: bool
    equalities: frozenset[int] = frozenset()  # operator positions of ==/!= on quantities
    edits: list[Edit] = field(default_factory=list)
    names: int = 0
    loops: int = 0
    heavy: bool = False

    def name(self) -> str:
        self.names += 1
        return f"dra_cost_{self.names}"

    def insert(self, position: int, text: str, rank: int) -> None:
        self.edits.append((position, position, text, rank))

    def charge_value(self, node: Node, depth: int, amount: int) -> None:
        """``cel.bind(v, node, dra_cost_add(amount) ? v : v)``: any type, charged after."""
        if amount:
            name = self.name()
            self.insert(node.start, f"cel.bind({name}, ", 2 * depth - RANK)
            self.insert(node.end, f", dra_cost_add({amount}) ? {name} : {name})", RANK - 2 * depth)

    def charge_bool(self, node: Node, depth: int, amount: int) -> None:
        """``(dra_cost_add(amount) && (node))``: a boolean, charged before it runs."""
        if amount:
            self.insert(node.start, f"(dra_cost_add({amount}) && (", 2 * depth - RANK)
            self.insert(node.end, "))", RANK - 2 * depth)

    # -- the cost of a node within its region; nested regions and sized calls charge themselves

    def cost(self, node: Node, depth: int, scope: frozenset[str]) -> int:
        if isinstance(node, Literal):
            return 0
        if isinstance(node, Ident):
            return 1
        if isinstance(node, Select):
            assert node.operand is not None
            return self.qualified(node.operand, depth, scope) + 1
        if isinstance(node, Index):
            assert node.operand is not None and node.key is not None
            key = node.key
            if self.is_constant(key) or isinstance(key, Ident):
                key_cost = 1
            else:
                key_cost = self.cost(key, depth + 1, scope) + 1
            return self.qualified(node.operand, depth, scope) + key_cost
        if isinstance(node, Aggregate):
            total = sum(self.cost(child, depth + 1, scope) for child in node.children)
            if self.optimized and self.is_constant(node):
                return 0
            opening = self.text[node.start]
            base = (
                _LIST_CREATE
                if opening == "["
                else _MAP_CREATE
                if opening == "{"
                else _STRUCT_CREATE
            )
            return base + total
        if isinstance(node, Operator):
            return self.operator(node, depth, scope)
        if isinstance(node, Call):
            return self.call(node, depth, scope)
        return 1

    def qualified(self, operand: Node, depth: int, scope: frozenset[str]) -> int:
        """The operand of a select/index: an attribute chain, or a value made relative (+1)."""
        inner = self.cost(operand, depth + 1, scope)
        return inner if _is_attribute(operand) else inner + 1

    def is_constant(self, node: Node) -> bool:
        """What ``OptOptimize`` folds to a constant before the cost tracker sees it."""
        if isinstance(node, Literal) or _is_number(node):
            return True
        if isinstance(node, Operator) and node.operator == "()":
            return self.is_constant(node.operands[0])
        if isinstance(node, Aggregate) and self.text[node.start] in "[{":
            return self.optimized and all(self.is_constant(child) for child in node.children)
        if (
            isinstance(node, Call) and node.target is None and node.function in _CONVERSIONS
            and len(node.args) == 1
        ):  # fmt: skip
            return self.optimized and self.is_constant(node.args[0])
        return False

    def operator(self, node: Operator, depth: int, scope: frozenset[str]) -> int:
        operands = node.operands
        kind = node.operator
        if kind == "()":
            return self.cost(operands[0], depth + 1, scope)
        if _is_number(node):
            return 0  # a negative literal is a constant to cel-go's parser
        if kind in ("&&", "||"):
            always = self.cost(operands[0], depth + 1, scope)
            sometimes = self.cost(operands[1], depth + 1, scope)
            if not self.exact:
                return always + sometimes
            self.charge_bool(operands[1], depth + 1, sometimes)
            return always
        if kind == "?:":
            condition = self.cost(operands[0], depth + 1, scope)
            branches = []
            for branch in operands[1:]:
                amount = self.cost(branch, depth + 1, scope)
                if _is_attribute(branch):
                    amount -= 1  # cel-go resolves it inside the conditional, unobserved
                branches.append(amount)
                if self.exact:
                    self.charge_value(branch, depth + 1, amount)
            return condition + (0 if self.exact else max(branches))
        if kind == "in" and self.optimized and isinstance(operands[1], Aggregate):
            elements = operands[1].children
            if self.text[operands[1].start] == "[" and not elements:
                return 0  # folded to false: the left side is not even evaluated
            if self.text[operands[1].start] == "[" and all(map(_is_primitive, elements)):
                return self.cost(operands[0], depth + 1, scope)  # a set lookup, no call
        total = sum(self.cost(operand, depth + 1, scope) for operand in operands)
        if len(operands) == 1:  # ! and unary -
            return total + 1
        left, right = operands
        if kind == "in":
            return total + self.sized(node, depth, "@in", [left, right], "{0} in {1}")
        if kind in _OPERATORS:
            if any(_is_scalar_literal(side) or _is_type(side) for side in operands):
                return total + 1
            texts = [side for side in operands if isinstance(side, Literal) and side.kind in _TEXT]
            if texts and not self.exact:  # min(|a|, |literal|) is at most the literal's size
                return total + max(1, call_cost("_==_", [texts[0].value, texts[0].value]))
            template = "{0} " + kind + " {1}"
            if node.position in self.equalities:  # by value (dra.cel.environment.quantity_equal)
                template = ("" if kind == "==" else "!") + "dra_qeq({0}, {1})"
            return total + self.sized(node, depth, _OPERATORS[kind], [left, right], template)
        if kind == "+" and not (_is_number(left) or _is_number(right)):
            self.heavy = True
            return total + self.sized(node, depth, "_+_", [left, right], "{0} + {1}")
        return total + 1

    def sized(self, node: Node, depth: int, rule: str, operands: list[Node], template: str) -> int:
        """Charge a size-dependent call before it runs:
        ``cel.bind(a, x, cel.bind(b, y, dra_cost_call(rule, [a, b]) ? f(a, b) : f(a, b)))``.
        The operands are rebound so each is evaluated once; returns the static cost (0)."""
        if all(self.is_constant(operand) for operand in operands):
            values = [_literal_value(operand) for operand in operands]
            if all(value is not _UNKNOWN for value in values):
                return call_cost(rule, values)
        names = [self.name() for _ in operands]
        self.insert(operands[0].start, f"cel.bind({names[0]}, ", 2 * depth + 1 - RANK)
        for previous, operand, name in zip(operands, operands[1:], names[1:], strict=False):
            self.edits.append((previous.end, operand.start, f", cel.bind({name}, ", 0))
        call = template.format(*names)
        self.close(
            node,
            depth,
            operands[-1],
            f', dra_cost_call("{rule}", [{", ".join(names)}]) ? {call} : {call}'
            + ")" * len(operands),
        )
        return 0

    def close(self, node: Node, depth: int, last: Node, text: str) -> None:
        """Replace what follows the last operand up to the node's end (``)`` of a call); for an
        operator ending with its operand, insert just outside the operand's own wraps."""
        if last.end == node.end:
            self.insert(node.end, text, RANK - 2 * depth - 1)
        else:
            self.edits.append((last.end, node.end, text, 0))

    def call(self, node: Call, depth: int, scope: frozenset[str]) -> int:
        target, function, args = node.target, node.function, node.args
        if target is None and function == "has" and len(args) == 1:
            argument = args[0]
            if isinstance(argument, Select) and argument.operand is not None:
                # PresenceTestHasCost(false): the presence test itself is free
                return self.qualified(argument.operand, depth + 1, scope)
            return self.cost(argument, depth + 1, scope)
        namespace = (
            target.name
            if isinstance(target, Ident) and target.name in _NAMESPACES and target.name not in scope
            else None
        )
        is_bind = (
            isinstance(target, Ident) and target.name == "cel" and "cel" not in scope
            and function == "bind" and len(args) == 3 and isinstance(args[0], Ident)
        )  # fmt: skip
        if is_bind:
            assert isinstance(args[0], Ident)
            init = self.cost(args[1], depth + 1, scope)
            body = self.cost(args[2], depth + 1, scope | {args[0].name})
            return init + body + (0 if self.optimized else _LIST_CREATE)
        if target is not None and namespace is None and _variables(function, args):
            return self.comprehension(node, depth, scope)
        if (
            target is not None
            and namespace is None
            and function == "replace"
            and 2 <= len(args) <= 3
        ):
            self.heavy = True
            self.insert(target.start, "dra_cost_replace(", 2 * depth + 1 - RANK)
            self.edits.append((target.end, args[0].start, ", ", 0))
            return sum(self.cost(operand, depth + 1, scope) for operand in [target, *args])
        name = f"{namespace}.{function}" if namespace else function
        if name in HEAVY:
            self.heavy = True
        if (
            target is None
            and function in _CONVERSIONS
            and len(args) == 1
            and self.is_constant(node)
        ):
            return 0
        operands = ([] if target is None or namespace else [target]) + list(args)
        total = sum(self.cost(operand, depth + 1, scope) for operand in operands)
        if name == "ip" and target is not None and not args:
            return total + 1  # cidr.ip(): a field access
        if name in SELF_CHARGED or name not in CALL_COSTS:
            return total + (0 if name in SELF_CHARGED else 1)
        if not operands:
            return total + 1
        if target is None or namespace:
            prefix = name
            call = f"{prefix}({{args}})"
        else:
            call = f"{{0}}.{function}({{args}})"
        return total + self.member_or_global(node, depth, name, operands, call, target, namespace)

    def member_or_global(
        self,
        node: Call,
        depth: int,
        rule: str,
        operands: list[Node],
        call: str,
        target: Node | None,
        namespace: str | None,
    ) -> int:
        if all(self.is_constant(operand) for operand in operands):
            values = [_literal_value(operand) for operand in operands]
            if all(value is not _UNKNOWN for value in values):
                return call_cost(rule, values)
        names = [self.name() for _ in operands]
        if target is None or namespace:
            self.edits.append((node.start, operands[0].start, f"cel.bind({names[0]}, ", 0))
            arguments = ", ".join(names)
        else:
            self.insert(operands[0].start, f"cel.bind({names[0]}, ", 2 * depth + 1 - RANK)
            arguments = ", ".join(names[1:])
        for previous, operand, name in zip(operands, operands[1:], names[1:], strict=False):
            self.edits.append((previous.end, operand.start, f", cel.bind({name}, ", 0))
        invocation = call.format(names[0], args=arguments)
        self.close(
            node,
            depth,
            operands[-1],
            f', dra_cost_call("{rule}", [{", ".join(names)}]) ? {invocation} : {invocation}'
            + ")" * len(operands),
        )
        return 0

    def comprehension(self, node: Call, depth: int, scope: frozenset[str]) -> int:
        self.heavy = True
        target, function, args = node.target, node.function, node.args
        assert target is not None
        count = _variables(function, args)
        inner = scope | frozenset(arg.name for arg in args[:count] if isinstance(arg, Ident))
        body_depth = depth + 1
        total = self.cost(target, depth + 1, scope)
        body = args[-1]
        if function in _STOPPING:
            per_element, condition = _STOPPING[function]
            amount = per_element + self.cost(body, body_depth, inner)
            if self.exact:
                self.stopping(node, depth, amount, condition)
            else:
                self.bound(node, depth, amount)
            return total + 1
        if function in ("exists_one", "existsOne"):
            self.filtering(node, depth, body, self.cost(body, body_depth, inner), 2)
            return total + 2
        accumulating = function != "filter"
        step = _ACCUMULATING.get(function, 0) if accumulating else 13
        initial = 0 if self.optimized else (_MAP_CREATE if "Map" in function else _LIST_CREATE)
        if len(args) == count + 2 or function == "filter":
            predicate = body if function == "filter" else args[-2]
            own = self.cost(predicate, body_depth, inner)
            kept = step if function == "filter" else step + self.cost(body, body_depth, inner)
            self.filtering(node, depth, predicate, own, kept)
        else:
            if self.optimized and function in ("map", "transformList") and self.is_constant(body):
                step -= _LIST_CREATE  # [constant] is folded too
            # every element runs the same step: exact when charged up front
            self.bound(node, depth, step + self.cost(body, body_depth, inner), "dra_cost_loop")
        return total + initial + 1

    def filtering(self, node: Call, depth: int, predicate: Node, own: int, kept: int) -> None:
        """A loop running its predicate on every element and ``kept`` more when it is true: the
        predicate's cost up front, and (exact mode) the rest per element with
        ``cel.bind(v, p, v ? dra_cost_add(kept) : v)``, or its most up front (bound mode)."""
        if not self.exact:
            self.bound(node, depth, own + kept, "dra_cost_loop")
            return
        self.bound(node, depth, own, "dra_cost_loop")
        name = self.name()
        self.insert(predicate.start, f"cel.bind({name}, ", 2 * (depth + 1) - RANK)
        self.insert(
            predicate.end,
            f", {name} ? dra_cost_add({kept}) : {name})",
            RANK - 2 * (depth + 1),
        )

    def stopping(self, node: Call, depth: int, amount: int, condition: int) -> None:
        """``all``/``exists``, exactly: each element charges its cost, and the loop condition
        is charged once more when the loop stopped before the end, as cel-go evaluates it."""
        target, body = node.target, node.args[-1]
        assert target is not None
        self.loops += 1
        loop, range_name = self.loops, self.name()
        # cel.bind evaluates lazily: the loop runs as an argument of dra_cost_done.
        self.insert(target.start, f"cel.bind({range_name}, ", 2 * depth + 1 - RANK)
        self.edits.append(
            (
                target.end,
                node.args[0].start,
                f", dra_cost_done({loop}, dra_cost_enter({loop}, size({range_name})), {condition}, "
                f"{range_name}.{node.function}(",
                0,
            )
        )
        self.insert(body.start, f"dra_cost_step({loop}, {amount}) && (", 2 * (depth + 1) - RANK)
        self.insert(body.end, ")", RANK - 2 * (depth + 1))
        self.insert(node.end, "))", RANK - 2 * depth - 1)

    def bound(self, node: Call, depth: int, amount: int, charge: str = "dra_cost_times") -> None:
        """Charge ``amount`` per element before the loop runs, ``cel.bind(r, range,
        cel.bind(v, r.f(...), dra_cost_times(size(r), amount) ? v : v))``: every element's most
        expensive path (bound mode), or what every element pays (``dra_cost_loop``: a loop
        that cannot stop early, also refused at once past cel-cpp's iteration budget)."""
        if charge == "dra_cost_times" and (self.exact or not amount):
            return
        target = node.target
        assert target is not None
        range_name, result = self.name(), self.name()
        self.insert(target.start, f"cel.bind({range_name}, ", 2 * depth + 1 - RANK)
        self.edits.append(
            (
                target.end,
                node.args[0].start,
                f", cel.bind({result}, {range_name}.{node.function}(",
                0,
            )
        )
        self.insert(
            node.end,
            f", {charge}(size({range_name}), {amount}) ? {result} : {result}))",
            RANK - 2 * depth - 1,
        )


class _Unknown:
    pass


_UNKNOWN = _Unknown()


def _literal_value(node: Node) -> Any:
    """The value of a constant operand when it is a plain literal (for static call costs)."""
    if isinstance(node, Operator) and node.operator == "()":
        return _literal_value(node.operands[0])
    if isinstance(node, Literal):
        return node.value
    if _is_number(node):
        return 1
    return _UNKNOWN


def _metering(
    text: str,
    tree: Node,
    optimized: bool,
    always: bool,
    exact: bool,
    equalities: frozenset[int] = frozenset(),
) -> tuple[_Metering, int] | None:
    metering = _Metering(text, optimized, exact, equalities)
    root = metering.cost(tree, 1, frozenset())
    return (metering, root) if metering.heavy or always else None


def meter_edits(
    text: str,
    tree: Node,
    optimized: bool = True,
    always: bool = False,
    exact: bool = True,
    equalities: frozenset[int] = frozenset(),
) -> tuple[list[Edit], int]:
    """The edits that meter a parsed expression (see module doc), and the cost of its root
    region, which the caller settles after the evaluation (:func:`settle`: one call fewer);
    nothing when it cannot come near the limit (``always`` meters anyway). ``exact=False``
    charges an upper bound instead, with fewer calls: every branch and every comprehension
    element as if it ran its most expensive path, charged up front. ``optimized=False`` counts
    as cel-go does without ``OptOptimize`` (its own and Kubernetes' cost tests).
    ``equalities`` are the ``==``/``!=`` on quantities, written as ``dra_qeq`` calls where the
    meter rebinds their operands."""
    metered = _metering(text, tree, optimized, always, exact, equalities)
    if metered is None:
        return [], 0
    metering, root = metered
    if root > COST_LIMIT:  # certain to fail: before anything (lists.range(10**8)) is built
        metering.charge_value(tree, 1, root)
        return metering.edits, 0
    return metering.edits, root


def cost_edits(
    text: str, tree: Node, optimized: bool = True, always: bool = False, exact: bool = True
) -> list[Edit]:
    """:func:`meter_edits` with the root region charged inside the expression too."""
    metered = _metering(text, tree, optimized, always, exact)
    if metered is None:
        return []
    metering, root = metered
    metering.charge_value(tree, 1, root)
    return metering.edits


def settle(amount: int) -> bool:
    """Charge a metered expression's root region after its evaluation (the order of charges
    does not change whether the total passes the limit); whether it stayed within."""
    _meter.spent += amount
    if _meter.spent > COST_LIMIT:
        _meter.exceeded = True
    return not _meter.exceeded


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits; zero-width inserts at one position go in rank order."""
    for start, end, replacement, _ in sorted(
        edits, key=lambda edit: (edit[0], edit[1], edit[3]), reverse=True
    ):
        text = text[:start] + replacement + text[end:]
    return text


def metered_text(text: str, optimized: bool = True, exact: bool = True) -> str:
    """``text`` with only the meter's edits, always metered (tests, diagnostics)."""
    return apply_edits(text, cost_edits(text, parse(text), optimized, always=True, exact=exact))
