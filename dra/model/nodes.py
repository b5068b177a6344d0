"""Nodes and node selectors (node-affinity semantics)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dra.model.reader import Reader

__all__ = [
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "NodeSelector",
    "Node",
    "read_node_selector",
    "parse_node",
    "parse_node_selector",
]


_SELECTOR_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})


@dataclass(frozen=True, slots=True)
class NodeSelectorRequirement:
    key: str
    operator: str
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Node-affinity semantics of one requirement against a label (or field) map."""
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if not present:
            return False
        try:
            actual = int(labels[self.key])
        except ValueError:
            return False
        wanted = int(self.values[0])
        return actual > wanted if self.operator == "Gt" else actual < wanted

    def matches_field(self, fields: Mapping[str, str]) -> bool:
        """A field requirement as upstream's field selector reads it: a field the node lacks
        reads as "" (``In``/``NotIn`` carry exactly one value, checked when read)."""
        value = fields.get(self.key, "")
        return value == self.values[0] if self.operator == "In" else value != self.values[0]

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"key": self.key, "operator": self.operator}
        if self.values:
            result["values"] = list(self.values)
        return result


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()

    def matches(self, node: Node) -> bool:
        """All requirements ANDed; an empty term matches no node."""
        if not self.match_expressions and not self.match_fields:
            return False
        if not all(requirement.matches(node.labels) for requirement in self.match_expressions):
            return False
        fields = {"metadata.name": node.name}
        return all(requirement.matches_field(fields) for requirement in self.match_fields)


@dataclass(frozen=True, slots=True)
class NodeSelector:
    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, node: Node) -> bool:
        """Terms are ORed."""
        return any(term.matches(node) for term in self.terms)


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    labels: Mapping[str, str]


def _requirement(reader: Reader, raw: Any, path: str, is_field: bool) -> NodeSelectorRequirement:
    item = reader.obj(raw, path)
    key = reader.string(item.get("key"), f"{path}.key", required=True) or ""
    operator = reader.string(item.get("operator"), f"{path}.operator", required=True) or ""
    values = reader.strings(item.get("values"), f"{path}.values")
    if operator not in _SELECTOR_OPERATORS or (is_field and operator not in ("In", "NotIn")):
        raise reader.fail(f"{path}.operator", f"{operator!r} is not a valid operator")
    # Upstream's field selectors (nodeaffinity): In/NotIn with exactly one value, any key (a
    # node has only metadata.name; another key reads as "").
    if is_field and len(values) != 1:
        raise reader.fail(f"{path}.values", "must have one element")
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            raise reader.fail(f"{path}.values", "must have exactly one value for Gt/Lt")
        try:
            int(values[0])
        except ValueError:
            raise reader.fail(f"{path}.values", "must be an integer for Gt/Lt") from None
    return NodeSelectorRequirement(key, operator, values)


def read_node_selector(reader: Reader, raw: Any, path: str) -> NodeSelector | None:
    if raw is None:
        return None
    selector = reader.obj(raw, path)
    terms = []
    for index, raw_term in enumerate(
        reader.lst(selector.get("nodeSelectorTerms"), f"{path}.nodeSelectorTerms")
    ):
        term_path = f"{path}.nodeSelectorTerms[{index}]"
        term = reader.obj(raw_term, term_path)
        expressions = tuple(
            _requirement(reader, item, f"{term_path}.matchExpressions[{number}]", False)
            for number, item in enumerate(
                reader.lst(term.get("matchExpressions"), f"{term_path}.matchExpressions")
            )
        )
        fields = tuple(
            _requirement(reader, item, f"{term_path}.matchFields[{number}]", True)
            for number, item in enumerate(
                reader.lst(term.get("matchFields"), f"{term_path}.matchFields")
            )
        )
        terms.append(NodeSelectorTerm(expressions, fields))
    return NodeSelector(tuple(terms))


def parse_node_selector(raw: Any, label: str) -> NodeSelector | None:
    """A core/v1 NodeSelector (``{"nodeSelectorTerms": [...]}``, e.g. a claim's
    ``status.allocation.nodeSelector``); None for None."""
    return read_node_selector(Reader(label), raw, "nodeSelector")


def parse_node(raw: Any, label: str) -> Node:
    reader = Reader(label)
    node = reader.obj(raw, "node", required=True)
    metadata = reader.obj(node.get("metadata"), "metadata", required=True)
    name = reader.string(metadata.get("name"), "metadata.name", required=True) or ""
    labels_raw = reader.obj(metadata.get("labels"), "metadata.labels")
    labels = {}
    for key, value in labels_raw.items():
        labels[str(key)] = reader.string(value, f"metadata.labels[{key}]") or ""
    return Node(name, labels)
