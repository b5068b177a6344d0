"""Just enough OpenAPI for kubectl: `/openapi/v3` (+ one document per group version) and
`/openapi/v2`.

`kubectl create -f` validates before it sends. It first asks OpenAPI v3 whether the kind's PATCH
operation takes the `fieldValidation` query parameter; when it does, validation is left to the
server (the emulator checks the top level, `metadata` and the DRA kinds' `spec`: `schema.py`)
and nothing else is needed. Without these documents kubectl stops with "failed to download
openapi" unless `--validate=false`.

The schemas are shallow (`spec` and `status` are free-form objects): enough for discovery of
the kinds, not a copy of Kubernetes' schemas.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from typing import Any

from .resources import RESOURCES, Resource

__all__ = ["openapi_document"]

_META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_WRITE_PARAMETERS = [
    ("dryRun", "When present, indicates that modifications should not be persisted."),
    ("fieldManager", "A name associated with the actor or entity that is making these changes."),
    (
        "fieldValidation",
        "How the server treats unknown or duplicate fields: Ignore, Warn or Strict.",
    ),
]
_PATCH_TYPES = [
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
]


def _group_versions() -> dict[str, list[Resource]]:
    """`api/v1` or `apis/<group>/<version>` → its resources."""
    served: dict[str, list[Resource]] = {}
    for resource in RESOURCES.values():
        key = f"apis/{resource.group}/{resource.version}" if resource.group else "api/v1"
        served.setdefault(key, []).append(resource)
    return served


def _schema_name(resource: Resource, suffix: str = "") -> str:
    package = f"io.k8s.api.{resource.group.split('.')[0] or 'core'}.{resource.version}"
    return f"{package}.{resource.kind}{suffix}"


def _gvk(resource: Resource, kind: str | None = None) -> dict[str, str]:
    return {"group": resource.group, "version": resource.version, "kind": kind or resource.kind}


def _ref(name: str, v3: bool) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}" if v3 else f"#/definitions/{name}"}


def _schemas(resources: list[Resource], v3: bool) -> dict[str, Any]:
    free_form = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    schemas: dict[str, Any] = {
        f"{_META}.ObjectMeta": {
            "type": "object",
            "properties": {
                name: {"type": "string"}
                for name in (
                    "name",
                    "generateName",
                    "namespace",
                    "uid",
                    "resourceVersion",
                    "creationTimestamp",
                    "deletionTimestamp",
                )
            }
            | {
                "generation": {"type": "integer", "format": "int64"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                "finalizers": {"type": "array", "items": {"type": "string"}},
                "ownerReferences": {"type": "array", "items": free_form},
                "managedFields": {"type": "array", "items": free_form},
            },
        },
        f"{_META}.ListMeta": {
            "type": "object",
            "properties": {
                "resourceVersion": {"type": "string"},
                "continue": {"type": "string"},
                "remainingItemCount": {"type": "integer", "format": "int64"},
            },
        },
        f"{_META}.Status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    }
    for resource in resources:
        properties: dict[str, Any] = {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"allOf": [_ref(f"{_META}.ObjectMeta", v3)]},
            "spec": free_form,
        }
        if resource.status_subresource or resource.kind == "Namespace":
            properties["status"] = free_form
        schemas[_schema_name(resource)] = {
            "type": "object",
            "description": f"{resource.kind} ({resource.api_version}), as the emulator serves it.",
            "properties": properties,
            "x-kubernetes-group-version-kind": [_gvk(resource)],
        }
        schemas[_schema_name(resource, "List")] = {
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"allOf": [_ref(f"{_META}.ListMeta", v3)]},
                "items": {"type": "array", "items": _ref(_schema_name(resource), v3)},
            },
            "x-kubernetes-group-version-kind": [_gvk(resource, resource.list_kind)],
        }
    return schemas


def _parameter(name: str, where: str, description: str, v3: bool) -> dict[str, Any]:
    parameter: dict[str, Any] = {"name": name, "in": where, "description": description}
    if where == "path":
        parameter["required"] = True
    if v3:
        parameter["schema"] = {"type": "string", "uniqueItems": True}
    else:
        parameter["type"] = "string"
        parameter["uniqueItems"] = True
    return parameter


def _operation(
    resource: Resource,
    action: str,
    verb: str,
    schema: str,
    v3: bool,
    *,
    writes: bool = False,
    body_types: list[str] | None = None,
) -> dict[str, Any]:
    parameters = (
        [_parameter(name, "query", text, v3) for name, text in _WRITE_PARAMETERS] if writes else []
    )
    if verb == "patch":
        parameters.append(_parameter("force", "query", "Force an apply.", v3))
    response = _ref(schema, v3)
    operation: dict[str, Any] = {
        "operationId": f"{verb}{resource.kind}",
        "tags": [f"{resource.group or 'core'}_{resource.version}"],
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(resource),
    }
    if v3:
        operation["responses"] = {
            "200": {"description": "OK", "content": {"application/json": {"schema": response}}}
        }
        if body_types:
            operation["requestBody"] = {
                "required": True,
                "content": {
                    media: {"schema": _ref(_schema_name(resource), v3)} for media in body_types
                },
            }
    else:
        operation["responses"] = {"200": {"description": "OK", "schema": response}}
        if body_types:
            operation["consumes"] = body_types
            parameters.append(
                {
                    "name": "body",
                    "in": "body",
                    "required": True,
                    "schema": _ref(_schema_name(resource), v3),
                }
            )
    operation["parameters"] = parameters
    return operation


def _paths(resources: list[Resource], v3: bool) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    json_body = ["application/json"]
    for r in resources:
        prefix = f"/apis/{r.group}/{r.version}" if r.group else "/api/v1"
        scoped = f"{prefix}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else None
        collection = scoped or f"{prefix}/{r.plural}"
        path_parameters = (
            [_parameter("namespace", "path", "object name and auth scope", v3)]
            if r.namespaced
            else []
        )
        name_parameter = _parameter("name", "path", f"name of the {r.kind}", v3)
        obj, listed = _schema_name(r), _schema_name(r, "List")
        status = f"{_META}.Status"
        paths[collection] = {
            "get": _operation(r, "list", "list", listed, v3),
            "post": _operation(r, "post", "create", obj, v3, writes=True, body_types=json_body),
            "delete": _operation(r, "deletecollection", "deleteCollection", status, v3),
            "parameters": path_parameters,
        }
        item = {
            "get": _operation(r, "get", "read", obj, v3),
            "put": _operation(r, "put", "replace", obj, v3, writes=True, body_types=json_body),
            "patch": _operation(r, "patch", "patch", obj, v3, writes=True, body_types=_PATCH_TYPES),
            "delete": _operation(r, "delete", "delete", status, v3, writes=True),
            "parameters": [*path_parameters, name_parameter],
        }
        paths[f"{collection}/{{name}}"] = item
        if r.status_subresource:
            paths[f"{collection}/{{name}}/status"] = {
                verb: item[verb] for verb in ("get", "put", "patch", "parameters")
            }
        if scoped:
            paths[f"{prefix}/{r.plural}"] = {
                "get": _operation(r, "list", "listAllNamespaces", listed, v3)
            }
    return paths


@cache
def _v3(group_version: str) -> dict[str, Any]:
    resources = _group_versions()[group_version]
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": _paths(resources, v3=True),
        "components": {"schemas": _schemas(resources, v3=True)},
    }


@cache
def _v2() -> dict[str, Any]:
    resources = list(RESOURCES.values())
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": _paths(resources, v3=False),
        "definitions": _schemas(resources, v3=False),
    }


@cache
def _v3_index() -> dict[str, Any]:
    paths = {}
    for group_version in sorted(_group_versions()):
        digest = hashlib.sha512(json.dumps(_v3(group_version), sort_keys=True).encode())
        paths[group_version] = {
            "serverRelativeURL": f"/openapi/v3/{group_version}?hash={digest.hexdigest()[:64]}"
        }
    return {"paths": paths}


def openapi_document(path: str) -> dict[str, Any] | None:
    """The document served at `path` (`/openapi/v2`, `/openapi/v3`, `/openapi/v3/<gv>`), or
    None when there is none."""
    if path == "/openapi/v2":
        return _v2()
    if path == "/openapi/v3":
        return _v3_index()
    group_version = path.removeprefix("/openapi/v3/")
    if group_version != path and group_version in _group_versions():
        return _v3(group_version)
    return None
