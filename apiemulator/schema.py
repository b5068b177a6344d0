"""Which fields each kind knows, for the API server's unknown-field handling.

kube-apiserver drops a field its schema does not know, answering a `Warning: 299 - "unknown
field \\"spec.foo\\""` header, or refuses the request with 400 under `fieldValidation=Strict`.
The emulator checks the top level, `metadata`, and for the DRA kinds `spec` (and the claim
template's inner `spec`) against the field names of `resource.k8s.io/v1` as served at 1.36;
anything deeper is kept as sent.
"""

from __future__ import annotations

from typing import Any

__all__ = ["unknown_fields"]

_OBJECT_META = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_WITH_STATUS = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})
_WITHOUT_STATUS = frozenset({"apiVersion", "kind", "metadata", "spec"})
_CLAIM_SPEC = frozenset({"devices"})

# kind → {dotted path ("" for the top level) → the field names known there}
_KNOWN: dict[str, dict[str, frozenset[str]]] = {
    "DeviceClass": {
        "": _WITHOUT_STATUS,
        "spec": frozenset({"selectors", "config", "extendedResourceName"}),
    },
    "ResourceSlice": {
        "": _WITHOUT_STATUS,
        "spec": frozenset(
            {
                "driver",
                "pool",
                "nodeName",
                "nodeSelector",
                "allNodes",
                "devices",
                "perDeviceNodeSelection",
                "sharedCounters",
            }
        ),
    },
    "ResourceClaim": {"": _WITH_STATUS, "spec": _CLAIM_SPEC},
    "ResourceClaimTemplate": {
        "": _WITHOUT_STATUS,
        "spec": frozenset({"metadata", "spec"}),
        "spec.spec": _CLAIM_SPEC,
    },
    "Namespace": {"": _WITH_STATUS},
    "Node": {"": _WITH_STATUS},
    "Pod": {"": _WITH_STATUS},
    "ResourceQuota": {"": _WITH_STATUS},
}


def unknown_fields(kind: str, obj: Any) -> list[str]:
    """Remove the fields `kind` does not know from `obj` (in place); their dotted paths."""
    known = _KNOWN.get(kind, {})
    found: list[str] = []
    for path, names in (*known.items(), ("metadata", _OBJECT_META)):
        node: Any = obj
        for part in path.split(".") if path else ():
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            continue
        # Strategic-merge-patch directives (``$patch``, ``$setElementOrder/…``) are not fields.
        for name in [n for n in node if n not in names and not n.startswith("$")]:
            del node[name]
            found.append(f"{path}.{name}" if path else name)
    return found
