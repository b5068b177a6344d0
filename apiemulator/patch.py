"""Patch formats: JSON merge patch (RFC 7386), JSON patch (RFC 6902), apply (as a merge).

Strategic merge patch is treated exactly like a JSON merge patch: the kinds we serve have few
lists that Kubernetes merges by key, and our callers replace those lists whole. Directives such as
`$patch` and `$setElementOrder/...` are dropped. Server-side apply is likewise a merge of the
applied configuration into the live object (lists replaced), without field-ownership conflicts.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["PatchError", "apply_json_patch", "merge_patch", "strip_directives"]


class PatchError(ValueError):
    """A patch that cannot be applied (answered with 422 Invalid)."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, `null` deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strip_directives(patch: Any) -> Any:
    """Remove strategic-merge-patch directives (`$patch`, `$setElementOrder/...`, ...)."""
    if isinstance(patch, dict):
        return {k: strip_directives(v) for k, v in patch.items() if not k.startswith("$")}
    if isinstance(patch, list):
        return [strip_directives(v) for v in patch]
    return patch


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], part: str, *, for_insert: bool) -> int:
    if part == "-" and for_insert:
        return len(container)
    if not part.isdigit() or (part != "0" and part.startswith("0")):
        raise PatchError(f"invalid array index {part!r}")
    index = int(part)
    if index > len(container) or (index == len(container) and not for_insert):
        raise PatchError(f"array index {index} out of range")
    return index


def _parent(doc: Any, tokens: list[str]) -> Any:
    node = doc
    for part in tokens[:-1]:
        if isinstance(node, dict):
            if part not in node:
                raise PatchError(f"path element {part!r} not found")
            node = node[part]
        elif isinstance(node, list):
            node = node[_index(node, part, for_insert=False)]
        else:
            raise PatchError(f"cannot traverse into {part!r}")
    return node


def _get(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {path!r} not found")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, for_insert=False)]
    raise PatchError(f"path {path!r} not found")


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, for_insert=True), value)
    else:
        raise PatchError(f"cannot add at {path!r}")
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    tokens = _pointer(path)
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {path!r} not found")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, for_insert=False))
    raise PatchError(f"cannot remove {path!r}")


def apply_json_patch(document: dict[str, Any], operations: Any) -> Any:
    """Apply RFC 6902 operations (add, remove, replace, test, move, copy) to a copy."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc: Any = copy.deepcopy(document)
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation or "path" not in operation:
            raise PatchError(f"invalid operation {operation!r}")
        op, path = operation["op"], operation["path"]
        if op in ("add", "replace", "test") and "value" not in operation:
            raise PatchError(f"operation {op!r} needs a value")
        value = copy.deepcopy(operation.get("value"))
        if op == "add":
            doc = _add(doc, path, value)
        elif op == "remove":
            doc, _ = _remove(doc, path)
        elif op == "replace":
            _get(doc, path)
            if _pointer(path):
                doc, _ = _remove(doc, path)
            doc = _add(doc, path, value)
        elif op == "test":
            if _get(doc, path) != value:
                raise PatchError(f"test operation failed at {path!r}")
        elif op in ("move", "copy"):
            source = operation.get("from")
            if not isinstance(source, str):
                raise PatchError(f"operation {op!r} needs 'from'")
            if op == "move":
                if path.startswith(source + "/"):
                    raise PatchError("cannot move a value into itself")
                doc, moved = _remove(doc, source)
            else:
                moved = copy.deepcopy(_get(doc, source))
            doc = _add(doc, path, moved)
        else:
            raise PatchError(f"unknown operation {op!r}")
    return doc
