"""Field ownership for server-side apply, at the granularity the emulator merges at: a leaf
value or a whole list is one field (kube-apiserver goes into keyed lists; the emulator does not).

Fields are tuples of keys (`("metadata", "labels", "team")`), kept in `managedFields` in the
real `FieldsV1` form (`{"f:metadata": {"f:labels": {"f:team": {}}}}`).
"""

from __future__ import annotations

from typing import Any

from .errors import ApiError

__all__ = [
    "FieldPath",
    "changed_fields",
    "check_apply_conflicts",
    "fields_from_v1",
    "fields_to_v1",
    "leaf_fields",
]

FieldPath = tuple[str, ...]
_UNOWNED_META = frozenset(
    {
        "name",
        "namespace",
        "generateName",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    }
)
_MISSING = object()


def leaf_fields(obj: Any, prefix: FieldPath = ()) -> set[FieldPath]:
    """The fields an object sets: every non-object value (lists included) is one field."""
    fields: set[FieldPath] = set()
    if not isinstance(obj, dict):
        return fields
    for key, value in obj.items():
        if not prefix and key in ("apiVersion", "kind"):
            continue
        if prefix == ("metadata",) and key in _UNOWNED_META:
            continue
        path = (*prefix, key)
        if isinstance(value, dict) and value:
            fields |= leaf_fields(value, path)
        else:
            fields.add(path)
    return fields


def _value(obj: Any, path: FieldPath) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return _MISSING
        obj = obj[key]
    return obj


def changed_fields(old: dict[str, Any], new: dict[str, Any]) -> set[FieldPath]:
    return {p for p in leaf_fields(old) | leaf_fields(new) if _value(old, p) != _value(new, p)}


def fields_to_v1(fields: set[FieldPath]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in sorted(fields):
        node = tree
        for key in path:
            node = node.setdefault(f"f:{key}", {})
    return tree


def fields_from_v1(tree: dict[str, Any], prefix: FieldPath = ()) -> set[FieldPath]:
    fields: set[FieldPath] = set()
    for key, sub in tree.items():
        if not key.startswith("f:"):
            continue  # k: (keyed list items), v: (set items), "." (the object itself)
        path = (*prefix, key[2:])
        children = {k: v for k, v in (sub or {}).items() if k.startswith("f:")}
        fields |= fields_from_v1(children, path) if children else {path}
    return fields


def check_apply_conflicts(
    live: dict[str, Any], applied_obj: dict[str, Any], applied: set[FieldPath], manager: str
) -> None:
    """409 when the apply would change a field another manager owns (unless forced)."""
    conflicts: dict[str, list[str]] = {}
    for entry in live.get("metadata", {}).get("managedFields") or []:
        who = entry.get("manager", "")
        if who == manager:
            continue
        label = (
            f'"{who}"'
            if entry.get("operation") == "Apply"
            else (f'"{who}" using {entry.get("apiVersion", "")}')
        )
        for path in sorted(fields_from_v1(entry.get("fieldsV1") or {}) & applied):
            if _value(live, path) != _value(applied_obj, path):
                conflicts.setdefault(label, []).append("." + ".".join(path))
    if not conflicts:
        return
    count = sum(len(paths) for paths in conflicts.values())
    if count == 1:
        ((label, (only,)),) = conflicts.items()
        message = f"Apply failed with 1 conflict: conflict with {label}: {only}"
    else:
        parts = [
            f"conflicts with {label}:\n" + "\n".join(f"- {p}" for p in paths)
            for label, paths in conflicts.items()
        ]
        message = f"Apply failed with {count} conflicts: " + "\n".join(parts)
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {label}", "field": path}
        for label, paths in conflicts.items()
        for path in paths
    ]
    raise ApiError(409, "Conflict", message, {"causes": causes})
