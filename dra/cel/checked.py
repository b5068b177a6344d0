"""A reader of cel-cpp's checked expressions (``Expression.serialize()``: a ``cel.expr.CheckedExpr``
in a ``google.protobuf.Any``), for the compile-time checks cel-go runs after type checking
(:mod:`dra.cel.validators`).

cel-expr-python exposes no checked AST, but it serializes one: the expression tree with macros
expanded, every node's type, the overloads the checker chose and each node's offset in the source
(in code points). The protobuf wire format is decoded here directly (the message definitions are
not shipped with the binding); only the fields the checks need are read.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["CheckedAst", "CheckedNode", "CelType", "read_checked"]

# cel.expr.Type's primitive and well-known enums
_PRIMITIVES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WELL_KNOWN = {1: "any", 2: "google.protobuf.Timestamp", 3: "google.protobuf.Duration"}


@dataclass(frozen=True, slots=True)
class CelType:
    """A checked type: ``kind`` is a primitive name, ``dyn``, ``null_type``, ``list``, ``map``,
    ``type``, ``error``, ``type_param`` or a message / abstract type name."""

    kind: str
    parameters: tuple[CelType, ...] = ()

    def __str__(self) -> str:
        if not self.parameters:
            return self.kind
        return f"{self.kind}({', '.join(map(str, self.parameters))})"


_DYN = CelType("dyn")


@dataclass(slots=True)
class CheckedNode:
    """One expression: ``kind`` is const, ident, select, call, list, struct or comprehension."""

    id: int
    kind: str = ""
    function: str = ""  # call
    name: str = ""  # ident; select: the field
    constant: object = None  # const
    constant_kind: str = ""  # const: string, int, ...
    target: CheckedNode | None = None
    args: list[CheckedNode] = field(default_factory=list)  # call args, list elements
    optional_indices: list[int] = field(default_factory=list)
    entries: list[tuple[CheckedNode | None, CheckedNode, bool]] = field(default_factory=list)
    children: list[CheckedNode] = field(default_factory=list)  # every sub-expression


@dataclass(slots=True)
class CheckedAst:
    root: CheckedNode
    encoded_types: dict[int, bytes]  # decoded on demand: the checks look at few nodes
    overloads: dict[int, list[str]]
    positions: dict[int, int]
    types: dict[int, CelType] = field(default_factory=dict)

    def type_of(self, node: CheckedNode) -> CelType:
        known = self.types.get(node.id)
        if known is None:
            encoded = self.encoded_types.get(node.id)
            known = _DYN if encoded is None else _type(encoded)
            self.types[node.id] = known
        return known


def _varint(data: bytes, index: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[index]
        index += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, index
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    index = 0
    while index < len(data):
        key, index = _varint(data, index)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, index = _varint(data, index)
        elif wire == 1:
            value = struct.unpack_from("<Q", data, index)[0]
            index += 8
        elif wire == 2:
            length, index = _varint(data, index)
            value = data[index : index + length]
            index += length
        elif wire == 5:
            value = struct.unpack_from("<I", data, index)[0]
            index += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield number, wire, value


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _bytes(value: int | bytes) -> bytes:
    assert isinstance(value, bytes)
    return value


def _int(value: int | bytes) -> int:
    assert isinstance(value, int)
    return value


def _type(data: bytes) -> CelType:
    for number, _, value in _fields(data):
        if number == 1:
            return _DYN
        if number == 2:
            return CelType("null_type")
        if number in (3, 4):
            return CelType(_PRIMITIVES.get(_int(value), "dyn"))
        if number == 5:
            return CelType(_WELL_KNOWN.get(_int(value), "dyn"))
        if number == 6:
            element = next((_type(_bytes(v)) for n, _, v in _fields(_bytes(value)) if n == 1), _DYN)
            return CelType("list", (element,))
        if number == 7:
            parts = {n: _type(_bytes(v)) for n, _, v in _fields(_bytes(value)) if n in (1, 2)}
            return CelType("map", (parts.get(1, _DYN), parts.get(2, _DYN)))
        if number == 9:
            return CelType(_bytes(value).decode())
        if number == 10:
            return CelType("type_param")
        if number == 11:
            return CelType("type", (_type(_bytes(value)),))
        if number == 12:
            return CelType("error")
        if number == 14:
            name, parameters = "", []
            for n, _, v in _fields(_bytes(value)):
                if n == 1:
                    name = _bytes(v).decode()
                elif n == 2:
                    parameters.append(_type(_bytes(v)))
            return CelType(name, tuple(parameters))
    return _DYN


_CONSTANTS = {1: "null", 2: "bool", 3: "int", 4: "uint", 5: "double", 6: "string", 7: "bytes"}


def _constant(node: CheckedNode, data: bytes) -> None:
    for number, _, value in _fields(data):
        node.constant_kind = _CONSTANTS.get(number, "other")
        if number == 6:
            node.constant = _bytes(value).decode()
        elif number == 3:
            node.constant = _signed(_int(value))
        elif number == 5:
            node.constant = struct.unpack("<d", struct.pack("<Q", _int(value)))[0]
        elif isinstance(value, int):
            node.constant = value
        else:
            node.constant = value


def _expression(data: bytes) -> CheckedNode:
    """The tree of an Expr; iterative over the message nesting (no recursion on input depth)."""
    root = CheckedNode(0)
    stack: list[tuple[CheckedNode, bytes]] = [(root, data)]
    while stack:
        node, payload = stack.pop()

        def child(raw: int | bytes, parent: CheckedNode = node) -> CheckedNode:
            created = CheckedNode(0)
            parent.children.append(created)
            stack.append((created, _bytes(raw)))
            return created

        for number, _, value in _fields(payload):
            if number == 2:
                node.id = _int(value)
            elif number == 3:
                node.kind = "const"
                _constant(node, _bytes(value))
            elif number == 4:
                node.kind = "ident"
                node.name = next(
                    (_bytes(v).decode() for n, _, v in _fields(_bytes(value)) if n == 1), ""
                )
            elif number == 5:
                node.kind = "select"
                for n, _, v in _fields(_bytes(value)):
                    if n == 1:
                        node.target = child(v)
                    elif n == 2:
                        node.name = _bytes(v).decode()
            elif number == 6:
                node.kind = "call"
                for n, _, v in _fields(_bytes(value)):
                    if n == 1:
                        node.target = child(v)
                    elif n == 2:
                        node.function = _bytes(v).decode()
                    elif n == 3:
                        node.args.append(child(v))
            elif number == 7:
                node.kind = "list"
                for n, wire, v in _fields(_bytes(value)):
                    if n == 1:
                        node.args.append(child(v))
                    elif n == 2 and wire == 2:
                        index = 0
                        packed = _bytes(v)
                        while index < len(packed):
                            item, index = _varint(packed, index)
                            node.optional_indices.append(item)
                    elif n == 2:
                        node.optional_indices.append(_int(v))
            elif number == 8:
                node.kind = "struct"
                for n, _, v in _fields(_bytes(value)):
                    if n != 2:
                        continue
                    key: CheckedNode | None = None
                    entry_value: CheckedNode | None = None
                    optional = False
                    for en, _, ev in _fields(_bytes(v)):
                        if en == 3:
                            key = child(ev)
                        elif en == 4:
                            entry_value = child(ev)
                        elif en == 5:
                            optional = bool(ev)
                    if entry_value is not None:
                        node.entries.append((key, entry_value, optional))
            elif number == 9:
                node.kind = "comprehension"
                for n, _, v in _fields(_bytes(value)):
                    if n in (2, 4, 5, 6, 7):
                        child(v)
    return root


def read_checked(serialized: bytes) -> CheckedAst:
    """Decode ``Expression.serialize()`` (an Any holding a CheckedExpr)."""
    checked = next((_bytes(v) for n, _, v in _fields(serialized) if n == 2), b"")
    root = CheckedNode(0)
    types: dict[int, bytes] = {}
    overloads: dict[int, list[str]] = {}
    positions: dict[int, int] = {}
    for number, _, value in _fields(checked):
        if number == 2:  # reference_map entry
            key, ids = 0, []
            for n, _, v in _fields(_bytes(value)):
                if n == 1:
                    key = _int(v)
                elif n == 2:
                    ids = [_bytes(rv).decode() for rn, _, rv in _fields(_bytes(v)) if rn == 3]
            overloads[key] = ids
        elif number == 3:  # type_map entry
            key, encoded = 0, b""
            for n, _, v in _fields(_bytes(value)):
                if n == 1:
                    key = _int(v)
                elif n == 2:
                    encoded = _bytes(v)
            types[key] = encoded
        elif number == 4:
            root = _expression(_bytes(value))
        elif number == 5:
            for n, _, v in _fields(_bytes(value)):
                if n != 4:
                    continue
                entry = {pn: _int(pv) for pn, _, pv in _fields(_bytes(v))}
                positions[entry.get(1, 0)] = entry.get(2, 0)
    return CheckedAst(root, types, overloads, positions)
