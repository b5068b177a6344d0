"""What a DRA selector reads from ``device``, and the source rewrite that makes it evaluable.

Kubernetes' ``device`` is an object with four fields. cel-expr-python cannot declare such an
object type, so each field becomes its own typed variable (``device.driver`` is rewritten to
``device_driver``: the same length, so compile-error positions stay those of the original text).
Kubernetes' attribute and capacity maps return an empty map for an unknown domain instead of
failing; lookups on them are rewritten to ``device_attributes[?key].orValue({})``, which behaves
the same (``"d" in device.attributes`` still tests real presence, like upstream).

The read set lists the paths the expression looks at, e.g. ``("attr", "gpu.nvidia.com",
"productName")``; two devices with equal values on those paths get equal results, which is
what the result cache relies on. Anything the analysis cannot follow widens the read set
(ultimately to the whole device), never narrows it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from dra.cel.comprehensions import (
    PositionMap,
    apply_edits,
    comprehension_edits,
    is_reserved,
    two_variable_arity,
)
from dra.cel.costs import RANK, Edit, meter_edits
from dra.cel.lists import RANGE_ALIAS, RENAMED, list_edits, range_edits
from dra.cel.network import RESERVED as NETWORK_RESERVED
from dra.cel.network import network_edits
from dra.cel.syntax import (
    MAX_NESTING,
    Aggregate,
    Call,
    CelNestingError,
    CelSyntaxError,
    Ident,
    Index,
    Literal,
    Node,
    Operator,
    Select,
    children,
    parse,
)

__all__ = [
    "DEVICE_FIELDS",
    "SelectorReads",
    "ReadPath",
    "analyze",
    "UnknownDeviceField",
    "UnknownFunction",
]

DEVICE_FIELDS = ("driver", "attributes", "capacity", "allowMultipleAllocations")

# ("driver",) ("multi",) ("attr", domain, id) ("attrdomain", domain) ("attrs",) and the same
# for capacity ("cap", ...), plus ("all",) for "the whole device".
ReadPath = tuple[str, ...]

_COMPREHENSIONS = frozenset(
    {"all", "exists", "exists_one", "existsOne", "map", "filter", "sortBy", "transformList",
     "transformMap", "transformMapEntry"}
)  # fmt: skip
_MAP_KIND = {"attributes": "attr", "capacity": "cap"}


class UnknownDeviceField(ValueError):
    """``device.<name>`` with a name the DRA device type does not have (a compile error)."""

    def __init__(self, name: str, position: int) -> None:
        super().__init__(name)
        self.name = name
        self.position = position


class UnknownFunction(ValueError):
    """A call of a name the environment declares only for its own rewrites (a compile error)."""

    def __init__(self, name: str, position: int) -> None:
        super().__init__(name)
        self.name = name
        self.position = position


_RESERVED = frozenset(RENAMED.values()) | {RANGE_ALIAS} | NETWORK_RESERVED


@dataclass(slots=True)
class SelectorReads:
    """Result of :func:`analyze`."""

    checked_text: str  # same length as the original; for compiling and error positions
    evaluated_text: str  # with the empty-map rewrites; what gets evaluated
    paths: frozenset[ReadPath]
    variables: frozenset[str]  # the activation variables the expression uses
    parsed: bool = True
    # offsets of checked_text → the original's, where the comprehension rewrite lengthened it
    positions: PositionMap | None = None
    # with the exact cost meter, when it differs from evaluated_text's upper bound (costs.py)
    exact_text: str = ""
    # the root region's cost, to settle after evaluating evaluated_text / exact_text
    root_cost: int = 0
    exact_root_cost: int = 0


@dataclass(slots=True)
class _Walk:
    text: str
    renames: list[tuple[int, int, str]] = field(default_factory=list)
    edits: list[tuple[int, int, str]] = field(default_factory=list)
    paths: set[ReadPath] = field(default_factory=set)
    variables: set[str] = field(default_factory=set)

    def rename(self, start: int, end: int, name: str) -> None:
        span = self.text[start:end]
        filler = "".join(character if character == "\n" else " " for character in span[len(name) :])
        self.renames.append((start, end, name + filler))


def _literal_key(node: Node | None) -> str | None:
    if isinstance(node, Literal) and node.kind == "string":
        return str(node.value)
    return None


Folder = Callable[..., str | None]


class _Analyzer:
    def __init__(self, text: str, fold_quantity: Folder | None, fold_semver: Folder | None) -> None:
        self.walk = _Walk(text)
        self.fold_quantity = fold_quantity
        self.fold_semver = fold_semver

    # A "map reference" is device.attributes / device.capacity or an alias bound to it.
    def map_kind(self, node: Node | None, scope: dict[str, str]) -> str | None:
        if isinstance(node, Select) and not node.optional and node.field in _MAP_KIND:
            operand = node.operand
            if isinstance(operand, Ident) and operand.name == "device" and "device" not in scope:
                return _MAP_KIND[node.field]
        if isinstance(node, Ident) and scope.get(node.name) in ("attr", "cap"):
            return scope[node.name]
        return None

    def visit_map_reference(self, node: Node, scope: dict[str, str]) -> None:
        """Rename ``device.attributes`` (aliases need nothing) and note the variable."""
        if isinstance(node, Select):
            assert node.operand is not None
            self.walk.rename(node.operand.start, node.end, f"device_{node.field}")
            self.walk.variables.add(f"device_{node.field}")

    def domain_lookup(
        self, node: Node | None, scope: dict[str, str]
    ) -> tuple[str, str | None] | None:
        """(kind, literal domain or None) if ``node`` looks up a domain in a map reference."""
        if isinstance(node, Index):
            kind = self.map_kind(node.operand, scope)
            if kind:
                return kind, _literal_key(node.key)
        if isinstance(node, Select):
            kind = self.map_kind(node.operand, scope)
            if kind:
                return kind, node.field
        return None

    def visit_domain_lookup(self, node: Node, scope: dict[str, str], whole_domain: bool) -> None:
        kind, domain = self.domain_lookup(node, scope) or ("", None)
        operand = node.operand if isinstance(node, Index | Select) else None
        assert operand is not None
        self.visit_map_reference(operand, scope)
        if domain is None:
            self.walk.paths.add((f"{kind}s",))
        elif whole_domain:
            self.walk.paths.add((f"{kind}domain", domain))
        if isinstance(node, Index):
            assert node.key is not None
            if domain is None:
                self.visit(node.key, scope)
            if node.optional:
                self.walk.edits.append((node.start, node.start, "optional.of("))
                self.walk.edits.append((node.end, node.end, ".orValue({}))"))
            else:
                self.walk.edits.append((node.bracket + 1, node.bracket + 1, "?"))
                self.walk.edits.append((node.end, node.end, ".orValue({})"))
        elif isinstance(node, Select):
            replacement = f'[?"{node.field}"].orValue({{}})'
            if node.optional:
                self.walk.edits.append((node.start, node.start, "optional.of("))
                replacement += ")"
            self.walk.edits.append((node.dot, node.end, replacement))

    def visit(self, node: Node | None, scope: dict[str, str]) -> None:
        if node is None:
            return
        if isinstance(node, Ident):
            if is_reserved(node.name) and node.name not in scope:
                raise UnknownFunction(node.name, node.start)
            if node.name == "device" and "device" not in scope:
                self.walk.paths.add(("all",))
                self.walk.variables.add("device")
            elif scope.get(node.name) in ("attr", "cap"):
                self.walk.paths.add((f"{scope[node.name]}s",))
            return
        if isinstance(node, Literal):
            return
        if isinstance(node, Select | Index):
            self.visit_access(node, scope)
            return
        if isinstance(node, Call):
            self.visit_call(node, scope)
            return
        if isinstance(node, Aggregate):
            for child in node.children:
                self.visit(child, scope)
            return
        if isinstance(node, Operator):
            for operand in node.operands:
                self.visit(operand, scope)
            return

    def visit_access(self, node: Select | Index, scope: dict[str, str]) -> None:
        operand = node.operand
        # device.<field>
        if (
            isinstance(node, Select)
            and isinstance(operand, Ident)
            and operand.name == "device"
            and "device" not in scope
        ):
            if node.field not in DEVICE_FIELDS:
                raise UnknownDeviceField(node.field, node.dot + 1)
            if node.optional:
                self.walk.paths.add(("all",))
                self.walk.variables.add("device")
                return
            if node.field in _MAP_KIND:
                self.walk.paths.add((f"{_MAP_KIND[node.field]}s",))
                self.visit_map_reference(node, scope)
                return
            self.walk.rename(operand.start, node.end, f"device_{node.field}")
            self.walk.variables.add(f"device_{node.field}")
            self.walk.paths.add(("driver",) if node.field == "driver" else ("multi",))
            return
        # <domain lookup>.<id> or <domain lookup>[<id>]
        inner = self.domain_lookup(operand, scope)
        if inner is not None and operand is not None:
            kind, domain = inner
            identifier = node.field if isinstance(node, Select) else _literal_key(node.key)
            if domain is not None and identifier is not None:
                self.walk.paths.add((kind, domain, identifier))
                self.visit_domain_lookup(operand, scope, whole_domain=False)
            else:
                self.visit_domain_lookup(operand, scope, whole_domain=True)
            if isinstance(node, Index) and identifier is None:
                self.visit(node.key, scope)
            return
        if self.domain_lookup(node, scope) is not None:
            self.visit_domain_lookup(node, scope, whole_domain=True)
            return
        self.visit(operand, scope)
        if isinstance(node, Index):
            self.visit(node.key, scope)

    def fold_constant(self, node: Call) -> bool:
        """Replace ``quantity("lit")``/``semver("lit"[, bool])`` by the value they produce.

        Only in the evaluated text, and only for valid literals (an invalid one must still
        raise its runtime error). Saves a Python call per evaluation.
        """
        arguments = node.args
        if not arguments or _literal_key(arguments[0]) is None:
            return False
        text = _literal_key(arguments[0])
        assert text is not None
        folded = None
        if node.function == "quantity" and len(arguments) == 1 and self.fold_quantity:
            folded = self.fold_quantity(text)
        elif node.function == "semver" and self.fold_semver:
            if len(arguments) == 1:
                folded = self.fold_semver(text, False)
            elif (
                len(arguments) == 2
                and isinstance(arguments[1], Literal)
                and arguments[1].kind == "bool"
            ):
                folded = self.fold_semver(text, bool(arguments[1].value))
        if folded is None:
            return False
        self.walk.edits.append((node.start, node.end, folded))
        return True

    def visit_call(self, node: Call, scope: dict[str, str]) -> None:
        if node.function in _RESERVED or is_reserved(node.function):
            # cel-go reports an undeclared function at its call's parenthesis
            name = self.walk.text.index(node.function, node.start)
            raise UnknownFunction(node.function, self.walk.text.index("(", name))
        if node.target is not None and node.function in RENAMED:
            start = self.walk.text.index(node.function, node.target.end)
            self.walk.rename(start, start + len(node.function), RENAMED[node.function])
        if node.target is None and node.function == "has" and len(node.args) == 1:
            argument = node.args[0]
            if isinstance(argument, Select) and not argument.optional:
                operand = argument.operand
                always_present = (
                    isinstance(operand, Ident)
                    and operand.name == "device"
                    and "device" not in scope
                    and argument.field in DEVICE_FIELDS
                ) or self.map_kind(operand, scope) is not None
                if always_present:
                    # Present fields of the device object, and the empty-map default of the
                    # attribute/capacity maps, make has() true (as with upstream's map wrapper).
                    self.walk.rename(node.start, node.end, "true")
                    return
        if node.target is None and self.fold_constant(node):
            return
        target = node.target
        is_bind = (
            isinstance(target, Ident) and target.name == "cel" and node.function == "bind"
            and len(node.args) == 3 and isinstance(node.args[0], Ident)
        )  # fmt: skip
        if is_bind:
            variable = node.args[0]
            assert isinstance(variable, Ident)
            initializer = node.args[1]
            alias = self.map_kind(initializer, scope)
            if alias is not None:
                self.visit_map_reference(initializer, scope)
            else:
                self.visit(initializer, scope)
            inner = dict(scope)
            inner[variable.name] = alias or "shadow"
            self.visit(node.args[2], inner)
            return
        if target is not None and node.function in _COMPREHENSIONS and len(node.args) >= 2:
            self.visit(target, scope)
            variables = [argument for argument in node.args[:-1] if isinstance(argument, Ident)]
            inner = dict(scope)
            bound = 2 if two_variable_arity(node) and len(variables) >= 2 else 1
            for variable in variables[:bound]:
                inner[variable.name] = "shadow"
            for argument in node.args[bound:]:
                self.visit(argument, inner)
            return
        self.visit(target, scope)
        for argument in node.args:
            self.visit(argument, scope)


def _apply(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits; zero-width inserts at one position go in rank order."""
    for start, end, replacement, _ in sorted(
        edits, key=lambda edit: (edit[0], edit[1], edit[3]), reverse=True
    ):
        text = text[:start] + replacement + text[end:]
    return text


def _ranked(edits: list[tuple[int, int, str]]) -> list[Edit]:
    return [(start, end, replacement, 0) for start, end, replacement in edits]


def _late_rewrites(text: str) -> str:
    """``text`` with its network values, two-variable comprehensions (and ``existsOne``,
    ``unwrap``) and ``lists.range`` calls rewritten into what cel-cpp evaluates. ``text`` is
    our own rewrite of an accepted selector: deeper than the original by the meter's
    bindings, so parsed with a higher nesting limit."""
    tree = parse(text, limit=_REWRITTEN_NESTING)
    _, network = network_edits(text, tree)
    _, comprehensions = comprehension_edits(text, tree)
    return _apply(text, network + comprehensions + range_edits(text, tree))


# Each nesting level of a selector gains at most a few levels of bindings and charges.
_REWRITTEN_NESTING = 8 * MAX_NESTING


def _equality_edits(tree: Node, equalities: frozenset[int], metered: list[Edit]) -> list[Edit]:
    """``A == B`` → ``dra_qeq(A, B)`` (``!=``: ``!dra_qeq(A, B)``) for the operators at
    ``equalities`` (quantities: by value), where the meter did not already write them so
    (it does where it rebinds their operands). Ranks as the meter's, by depth."""
    edits: list[Edit] = []
    rebound = {(start, end) for start, end, _, _ in metered}
    stack: list[tuple[Node, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        stack.extend((child, depth + 1) for child in children(node))
        if not (
            isinstance(node, Operator)
            and node.operator in ("==", "!=")
            and node.position in equalities
        ):
            continue
        left, right = node.operands
        if (left.end, right.start) in rebound:
            continue
        opening = "dra_qeq(" if node.operator == "==" else "!dra_qeq("
        edits.append((left.start, left.start, opening, 2 * depth + 1 - RANK))
        edits.append((left.end, right.start, ", ", 0))
        edits.append((right.end, right.end, ")", RANK - 2 * depth - 1))
    return edits


def analyze(
    text: str,
    fold_quantity: Folder | None = None,
    fold_semver: Folder | None = None,
    *,
    optimized: bool = True,
    always_metered: bool = False,
    quantity_equalities: frozenset[int] = frozenset(),
) -> SelectorReads:
    """Analyse a selector; raises :class:`UnknownDeviceField` for ``device.<unknown>``.

    If the expression cannot be parsed here it is returned unchanged with the whole device as
    its read set (cel-expr-python then reports the syntax error, if there is one); one nested
    deeper than the parser's limit raises :class:`CelNestingError`. The evaluated text also
    carries the cost meter (:mod:`dra.cel.costs`; ``optimized``/``always_metered`` as there).
    ``quantity_equalities`` are the positions of ``==``/``!=`` the checker typed on quantities
    (``dra.cel.selectors``): the evaluated text compares those by value.
    """
    analyzer = _Analyzer(text, fold_quantity, fold_semver)
    try:
        tree = parse(text)
    except CelNestingError:
        raise
    except (CelSyntaxError, ValueError, IndexError):
        return SelectorReads(text, text, frozenset({("all",)}), frozenset({"device"}), parsed=False)
    analyzer.visit(tree, {})
    walk = analyzer.walk
    network_checked, network_evaluated = network_edits(text, tree)
    comprehension_checked, comprehension_evaluated = comprehension_edits(text, tree)
    checked, positions = apply_edits(
        text, _ranked(walk.renames) + network_checked + comprehension_checked
    )
    edits = _ranked(walk.renames + walk.edits) + list_edits(text, tree)
    (bound_edits, bound_root), (exact_edits, exact_root) = (
        meter_edits(text, tree, optimized, always_metered, exact, quantity_equalities)
        for exact in (False, True)
    )
    evaluated = _apply(
        text, edits + bound_edits + _equality_edits(tree, quantity_equalities, bound_edits)
    )
    exact = _apply(
        text, edits + exact_edits + _equality_edits(tree, quantity_equalities, exact_edits)
    )
    if network_evaluated or comprehension_evaluated or range_edits(text, tree):
        # The meter charges what upstream evaluates, on the original tree. What cel-cpp lacks
        # or gets wrong (two-variable comprehensions, network values, ``lists.range`` of a
        # negative size) is rewritten afterwards, in the metered text: the meter binds each
        # range and argument to a name and leaves the call itself (``<name>.all(i, v, …)``,
        # ``string(<name>)``) where the later rewrites find it.
        evaluated, exact = _late_rewrites(evaluated), _late_rewrites(exact)
    return SelectorReads(
        checked,
        evaluated,
        frozenset(walk.paths),
        frozenset(walk.variables),
        positions=positions if comprehension_checked else None,
        exact_text="" if exact == evaluated else exact,
        root_cost=bound_root,
        exact_root_cost=exact_root,
    )
