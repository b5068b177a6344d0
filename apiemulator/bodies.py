"""Request bodies and list options, read the way the real API server reads them."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from .errors import ApiError
from .resources import Resource
from .schema import unknown_fields

__all__ = ["drop_unknown_fields", "parse_json", "parse_yaml", "snake_keys", "validate_list_options"]


def drop_unknown_fields(resource: Resource, obj: Any, query: dict[str, str]) -> list[str]:
    """Drop the fields `resource` does not know from a request body: the `Warning` headers to
    answer, or 400 under `fieldValidation=Strict` (`Ignore` drops them silently)."""
    if not isinstance(obj, dict):
        return []
    unknown = unknown_fields(resource.kind, obj)
    mode = query.get("fieldValidation") or "Warn"
    if mode not in ("Ignore", "Warn", "Strict"):
        raise ApiError.bad_request(
            f"fieldValidation parameter unsupported: {mode}. Valid values are Ignore, Warn, Strict"
        )
    if not unknown or mode == "Ignore":
        return []
    if mode == "Strict":
        listed = ", ".join(f'unknown field "{field}"' for field in unknown)
        raise ApiError.bad_request(
            f'{resource.kind} in version "{resource.version}" cannot be handled as a '
            f"{resource.kind}: strict decoding error: {listed}"
        )
    return [f'299 - "unknown field \\"{field}\\""' for field in unknown]


def validate_list_options(query: dict[str, str]) -> None:
    """kube-apiserver's checks of a list's resourceVersion, resourceVersionMatch and continue."""
    rv, match = query.get("resourceVersion", ""), query.get("resourceVersionMatch", "")
    if match and not rv:
        raise ApiError(
            422,
            "Invalid",
            'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
            {"kind": "ListOptions", "group": "meta.k8s.io"},
        )
    if match not in ("", "Exact", "NotOlderThan"):
        raise ApiError(
            422,
            "Invalid",
            f'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: '
            f'"{match}": supported values: "Exact", "NotOlderThan"',
            {"kind": "ListOptions", "group": "meta.k8s.io"},
        )
    if query.get("continue") and rv:
        raise ApiError.bad_request("specifying resource version is not allowed when using continue")


def snake_keys(item: Any) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ApiError.bad_request("a fault must be a JSON object")
    return {re.sub(r"(?<!^)([A-Z])", r"_\1", k).lower(): v for k, v in item.items()}


def parse_json(body: bytes) -> Any:
    if body[:1] not in (b"{", b"[", b" ", b"\n", b"\t", b"\r", b"n", b""):
        raise ApiError(
            415,
            "UnsupportedMediaType",
            "the emulator only accepts JSON bodies (protobuf and CBOR are not supported)",
        )
    try:
        return json.loads(body or b"null")
    except ValueError as exc:
        raise ApiError.bad_request(f"the body of the request is not valid JSON: {exc}") from exc


def parse_yaml(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        pass
    try:
        return yaml.safe_load(body)
    except yaml.YAMLError as exc:
        raise ApiError.bad_request(f"the body of the request is not valid YAML: {exc}") from exc
