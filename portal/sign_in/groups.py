"""Which tenants and roles an identity provider's groups give a person (``OIDC_GROUP_MAP``).

Imported by ``portal.settings`` to refuse a bad mapping at start, so it imports no model: the
role names are the values of ``portal.models.roles.Role`` (a test pins that they agree).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

__all__ = [
    "ROLES",
    "GroupGrant",
    "groups_from_claims",
    "parse_group_map",
    "roles_for_groups",
]

MEMBER = "member"
TENANT_ADMIN = "tenant_admin"
ROLES = (MEMBER, TENANT_ADMIN)  # weakest first: a person in two groups gets the stronger role
_SLUG = re.compile(r"^[-a-zA-Z0-9_]{1,63}$")
_COMPACT_HELP = (
    "Write OIDC_GROUP_MAP as group=tenant-slug[:role] entries separated by commas "
    '(e.g. "team-a-admins=team-a:tenant_admin, team-b=team-b"), or as a JSON object '
    '(e.g. {"team-a-admins": "team-a:tenant_admin", "gpu-users": ["team-a", "team-b"]}).'
)


@dataclass(frozen=True)
class GroupGrant:
    """Membership of ``tenant`` (its slug) with ``role``, for everyone in one group."""

    tenant: str
    role: str


def _grant(group: str, target: Any) -> GroupGrant:
    where = f"OIDC_GROUP_MAP: group {group!r}"
    if not isinstance(target, str):
        raise ImproperlyConfigured(f"{where}: expected 'tenant-slug[:role]', got {target!r}.")
    tenant, _, role = target.strip().partition(":")
    tenant, role = tenant.strip(), (role.strip() or MEMBER)
    if not _SLUG.fullmatch(tenant):
        raise ImproperlyConfigured(
            f"{where}: {tenant!r} is not a tenant slug (letters, digits, '-' and '_')."
        )
    if role not in ROLES:
        raise ImproperlyConfigured(
            f"{where}: role {role!r} is not one of {', '.join(ROLES)} (tenant {tenant!r})."
        )
    return GroupGrant(tenant=tenant, role=role)


def _entries(raw: str) -> list[tuple[str, Any]]:
    text = raw.strip()
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as error:
            raise ImproperlyConfigured(f"OIDC_GROUP_MAP is not valid JSON: {error}.") from None
        if not isinstance(parsed, dict):
            raise ImproperlyConfigured(f"OIDC_GROUP_MAP must be a JSON object. {_COMPACT_HELP}")
        entries: list[tuple[str, Any]] = []
        for group, target in parsed.items():
            targets = target if isinstance(target, list) else [target]
            entries.extend((group, item) for item in targets)
        if not entries and parsed:
            raise ImproperlyConfigured(f"OIDC_GROUP_MAP maps a group to nothing. {_COMPACT_HELP}")
        return entries
    entries = []
    for item in text.split(","):
        if not item.strip():
            continue
        group, equals, target = item.rpartition("=")
        if not equals or not group.strip() or not target.strip():
            raise ImproperlyConfigured(
                f"OIDC_GROUP_MAP: entry {item.strip()!r} is not group=tenant-slug[:role]. "
                + _COMPACT_HELP
            )
        entries.append((group.strip(), target))
    return entries


def parse_group_map(raw: str) -> dict[str, tuple[GroupGrant, ...]]:
    """Parses ``OIDC_GROUP_MAP``; raises ``ImproperlyConfigured`` naming the bad entry.

    A group may grant several tenants; one group naming the same tenant twice is refused (which
    role was meant is unclear).
    """
    result: dict[str, list[GroupGrant]] = {}
    for group, target in _entries(raw):
        if not group:
            raise ImproperlyConfigured("OIDC_GROUP_MAP: a group name is empty.")
        grant = _grant(group, target)
        grants = result.setdefault(group, [])
        if any(existing.tenant == grant.tenant for existing in grants):
            raise ImproperlyConfigured(
                f"OIDC_GROUP_MAP: group {group!r} names tenant {grant.tenant!r} twice."
            )
        grants.append(grant)
    return {group: tuple(grants) for group, grants in result.items()}


def groups_from_claims(claims: Mapping[str, Any], claim: str) -> list[str]:
    """The person's groups from the claim named ``claim`` (a dotted path reaches into nested
    claims, e.g. Keycloak's ``realm_access.roles``): a list of strings or one string; anything
    else counts as no group."""
    value: Any = claims
    for part in claim.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return sorted({item for item in value if isinstance(item, str)})
    return []


def roles_for_groups(
    groups: Iterable[str], group_map: Mapping[str, Iterable[GroupGrant]]
) -> dict[str, str]:
    """Tenant slug → role for a person in ``groups``; the stronger role wins where two groups
    name one tenant."""
    roles: dict[str, str] = {}
    for group in groups:
        for grant in group_map.get(group, ()):
            current = roles.get(grant.tenant)
            if current is None or ROLES.index(grant.role) > ROLES.index(current):
                roles[grant.tenant] = grant.role
    return roles
