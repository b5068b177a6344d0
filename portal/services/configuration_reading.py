"""Reading a configuration document (:mod:`portal.services.configuration`): its shape, checked
field by field, every problem kept with its path (``tenants[0].quotas.gpu.nvidia.com.max_lease``)
so that a document is refused once, whole, with all of them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from portal.models.roles import Role
from portal.services import tenants as services
from portal.services.tenants import MAX_NAMESPACES_PER_TENANT
from toolkit.durations import DurationError, parse_duration
from toolkit.quantities import QuantityError, parse_bytes

__all__ = ["API_VERSION", "KIND", "QUOTA_FIELDS", "TENANT_FIELDS", "TenantSpec", "read_document"]

API_VERSION = "dra-portal/v1"
KIND = "PortalConfiguration"
MAX_TENANTS = 1000

_TOP_KEYS = {"apiVersion", "kind", "tenants"}
TENANT_FIELDS = {
    "name": str,
    "description": str,
    "requires_approval": bool,
    "resource_quota_backstop": bool,
    "max_token_lifetime": "duration",
    "webhook_url": str,
}
_TENANT_KEYS = {"slug", "namespaces", "members", "quotas", *TENANT_FIELDS}
QUOTA_FIELDS = {
    "max_devices": "count",
    "max_device_memory": "bytes",
    "max_claims": "count",
    "max_lease": "duration",
    "approve_above_devices": "count",
    "approve_above_memory": "bytes",
    "approve_above_lease": "duration",
    "approve_over_quota": bool,
}
_SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
_ROLES = {role.value for role in Role}


@dataclass(slots=True)
class TenantSpec:
    slug: str
    path: str
    fields: dict[str, Any]
    namespaces: list[str] | None
    members: dict[str, str] | None
    quotas: dict[str, dict[str, Any]] | None


def _value(kind: Any, raw: Any, path: str, problems: list[tuple[str, str]]) -> Any:
    """One field's value as the services take it, or a problem."""
    if kind is str:
        if not isinstance(raw, str):
            problems.append((path, "Expected a string."))
        return raw
    if kind is bool:
        if not isinstance(raw, bool):
            problems.append((path, "Expected true or false."))
        return raw
    if raw is None:
        return None  # blank: unlimited / none
    if kind == "count":
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            problems.append((path, "Expected a whole number of 0 or more (null: unlimited)."))
        return raw
    if kind == "bytes":
        if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
            return raw
        try:
            return parse_bytes(str(raw))
        except QuantityError as error:
            problems.append((path, str(error)))
            return None
    try:
        return parse_duration(str(raw))
    except DurationError as error:
        problems.append((path, str(error)))
        return None


def _unknown(keys: Any, known: set[str], path: str, problems: list[tuple[str, str]]) -> None:
    for key in sorted(set(keys) - known, key=str):
        problems.append((f"{path}.{key}" if path else str(key), "Unknown field."))


def read_document(
    document: Any, problems: list[tuple[str, str]], sections: set[str]
) -> list[TenantSpec]:
    """The tenants of a document, checked field by field; ``sections`` are the other top-level
    keys apps registered."""
    if not isinstance(document, Mapping):
        problems.append(("", "The configuration must be a mapping (apiVersion, kind, tenants)."))
        return []
    _unknown(document, _TOP_KEYS | sections, "", problems)
    if document.get("apiVersion") != API_VERSION:
        problems.append(("apiVersion", f"Expected '{API_VERSION}'."))
    if document.get("kind") != KIND:
        problems.append(("kind", f"Expected '{KIND}'."))
    entries = document.get("tenants", [])
    if not isinstance(entries, list):
        problems.append(("tenants", "Expected a list of tenants."))
        return []
    if len(entries) > MAX_TENANTS:
        problems.append(("tenants", f"At most {MAX_TENANTS} tenants in one document."))
        return []
    specs: list[TenantSpec] = []
    seen: dict[str, str] = {}
    for index, entry in enumerate(entries):
        path = f"tenants[{index}]"
        if not isinstance(entry, Mapping):
            problems.append((path, "Expected a mapping (slug, name, namespaces, ...)."))
            continue
        _unknown(entry, _TENANT_KEYS, path, problems)
        slug = entry.get("slug")
        if not isinstance(slug, str) or not _SLUG.match(slug):
            problems.append((f"{path}.slug", "Expected a slug: lowercase letters, digits and '-'."))
            continue
        if slug in seen:
            problems.append(
                (f"{path}.slug", f"Tenant {slug} is declared twice (also {seen[slug]}).")
            )
            continue
        seen[slug] = path
        fields = {
            key: _value(kind, entry[key], f"{path}.{key}", problems)
            for key, kind in TENANT_FIELDS.items()
            if key in entry
        }
        specs.append(
            TenantSpec(
                slug=slug,
                path=path,
                fields=fields,
                namespaces=_read_namespaces(entry, path, problems),
                members=_read_members(entry, path, problems),
                quotas=_read_quotas(entry, path, problems),
            )
        )
    return specs


def _read_namespaces(
    entry: Mapping, path: str, problems: list[tuple[str, str]]
) -> list[str] | None:
    if "namespaces" not in entry:
        return None
    names = entry["namespaces"]
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        problems.append((f"{path}.namespaces", "Expected a list of namespace names."))
        return None
    if len(names) > MAX_NAMESPACES_PER_TENANT:
        problems.append(
            (f"{path}.namespaces", f"A tenant owns at most {MAX_NAMESPACES_PER_TENANT} namespaces.")
        )
    return sorted({name.strip() for name in names if name.strip()})


def _read_members(
    entry: Mapping, path: str, problems: list[tuple[str, str]]
) -> dict[str, str] | None:
    if "members" not in entry:
        return None
    members = entry["members"]
    if not isinstance(members, Mapping):
        problems.append((f"{path}.members", "Expected a mapping of username to role."))
        return None
    for username, role in members.items():
        if role not in _ROLES:
            problems.append(
                (f"{path}.members.{username}", f"Expected a role: {', '.join(sorted(_ROLES))}.")
            )
    return {str(username): str(role) for username, role in members.items()}


def _read_quotas(
    entry: Mapping, path: str, problems: list[tuple[str, str]]
) -> dict[str, dict[str, Any]] | None:
    if "quotas" not in entry:
        return None
    quotas = entry["quotas"]
    if not isinstance(quotas, Mapping):
        problems.append((f"{path}.quotas", "Expected a mapping of device class to limits."))
        return None
    read: dict[str, dict[str, Any]] = {}
    for class_name, limits in quotas.items():
        where = f"{path}.quotas.{class_name}"
        if limits is None:
            limits = {}
        if not isinstance(limits, Mapping):
            problems.append((where, "Expected a mapping of limits (max_devices, max_lease, ...)."))
            continue
        _unknown(limits, set(QUOTA_FIELDS), where, problems)
        values = {
            key: _value(
                kind, limits.get(key, False if kind is bool else None), f"{where}.{key}", problems
            )
            for key, kind in QUOTA_FIELDS.items()
        }
        try:
            services.validate_quota(
                device_class_name=str(class_name), max_lease=values["max_lease"]
            )
        except ValidationError as error:
            for key, messages in error.message_dict.items():
                for message in messages:
                    problems.append(
                        (f"{where}.{key}" if key != "device_class_name" else where, message)
                    )
        read[str(class_name)] = values
    return read
