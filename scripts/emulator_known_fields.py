"""Write ``apiemulator/known_fields.json`` from a real kube-apiserver's OpenAPI v3 documents:
the fields each served kind has, at every depth, so that the emulator drops (or, under
``fieldValidation=Strict``, refuses) exactly the fields a real server would.

    kubectl get --raw /openapi/v3/api/v1 > core.json
    kubectl get --raw /openapi/v3/apis/resource.k8s.io/v1 > resource.json
    python scripts/emulator_known_fields.py core.json resource.json

The tree per kind: an object is ``{"f": {field: subtree}}``, a list ``{"i": subtree}``, a map
``{"m": subtree}``, a value of any shape (``x-kubernetes-preserve-unknown-fields``, e.g. a
driver's opaque parameters) ``null``, and a scalar ``0``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

KINDS = {
    "Namespace": "io.k8s.api.core.v1.Namespace",
    "Node": "io.k8s.api.core.v1.Node",
    "Pod": "io.k8s.api.core.v1.Pod",
    "ResourceQuota": "io.k8s.api.core.v1.ResourceQuota",
    "DeviceClass": "io.k8s.api.resource.v1.DeviceClass",
    "ResourceSlice": "io.k8s.api.resource.v1.ResourceSlice",
    "ResourceClaim": "io.k8s.api.resource.v1.ResourceClaim",
    "ResourceClaimTemplate": "io.k8s.api.resource.v1.ResourceClaimTemplate",
}
OUT = Path(__file__).resolve().parents[1] / "apiemulator" / "known_fields.json"


def tree(schema: dict[str, Any], schemas: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    if "allOf" in schema and len(schema["allOf"]) == 1:
        schema = {**schema, **schema["allOf"][0]}
    ref = schema.get("$ref")
    if ref:
        name = ref.rsplit("/", 1)[-1]
        if name in seen:  # a recursive type: accept anything below
            return None
        return tree(schemas[name], schemas, (*seen, name))
    if schema.get("x-kubernetes-preserve-unknown-fields") or schema.get(
        "x-kubernetes-int-or-string"
    ):
        return None if schema.get("x-kubernetes-preserve-unknown-fields") else 0
    kind = schema.get("type")
    if kind == "array":
        return {"i": tree(schema.get("items") or {}, schemas, seen)}
    if kind == "object" or "properties" in schema:
        if "properties" in schema:
            return {"f": {k: tree(v, schemas, seen) for k, v in schema["properties"].items()}}
        extra = schema.get("additionalProperties")
        return {"m": tree(extra, schemas, seen) if isinstance(extra, dict) else None}
    if not kind:  # no type (e.g. RawExtension, Quantity without type): any shape
        return None if not schema.get("format") else 0
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("documents", nargs="+", type=Path, help="OpenAPI v3 JSON documents")
    args = parser.parse_args()
    schemas: dict[str, Any] = {}
    for document in args.documents:
        schemas.update(json.loads(document.read_text())["components"]["schemas"])
    known = {kind: tree(schemas[name], schemas) for kind, name in KINDS.items()}
    OUT.write_text(json.dumps(known, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
