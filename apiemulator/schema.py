"""Which fields each kind knows, for the API server's unknown-field handling.

kube-apiserver drops a field its schema does not know, answering a `Warning: 299 - "unknown
field \\"spec.devices[0].foo\\""` header, or refuses the request with 400 under
`fieldValidation=Strict`. The emulator walks every level of a request body against
`known_fields.json`: the field tree of each kind it serves, generated from a real
kube-apiserver 1.36.3's OpenAPI v3 documents by `scripts/emulator_known_fields.py`. Values a
schema leaves open (a driver's opaque `parameters`, `managedFields`' `fieldsV1`) are kept as
sent; strategic-merge-patch directives (`$patch`, `$setElementOrder/…`) are not fields.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["unknown_fields"]

_KNOWN_FIELDS = Path(__file__).with_name("known_fields.json")


@cache
def _trees() -> dict[str, Any]:
    trees: dict[str, Any] = json.loads(_KNOWN_FIELDS.read_text())
    return trees


def unknown_fields(kind: str, obj: Any) -> list[str]:
    """Remove the fields `kind` does not know from `obj` (in place, at every depth); their
    paths as kube-apiserver names them (`spec.foo`, `spec.devices[0].foo`, `bar`)."""
    tree = _trees().get(kind)
    found: list[str] = []
    if tree is not None:
        _walk(obj, tree, "", found)
    return found


def _walk(value: Any, tree: Any, path: str, found: list[str]) -> None:
    # Iterative on purpose: a request body's depth is the client's to choose.
    stack = [(value, tree, path)]
    while stack:
        node, schema, where = stack.pop()
        if not isinstance(schema, dict):
            continue  # a scalar or a value of any shape
        if "f" in schema and isinstance(node, dict):
            fields = schema["f"]
            for name in list(node):
                if name.startswith("$"):
                    continue
                child = f"{where}.{name}" if where else name
                if name not in fields:
                    del node[name]
                    found.append(child)
                else:
                    stack.append((node[name], fields[name], child))
        elif "i" in schema and isinstance(node, list):
            stack.extend((item, schema["i"], f"{where}[{i}]") for i, item in enumerate(node))
        elif "m" in schema and isinstance(node, dict):
            stack.extend((item, schema["m"], f"{where}.{key}") for key, item in node.items())
    found.sort()
