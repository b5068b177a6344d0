"""Configuration as code: a whole tenancy document (tenants, their namespaces, members and
roles, quotas per device class with their approval thresholds) planned and applied through the
tenancy services, in one transaction.

The document is what platform teams keep in git (``docs/cli.md``)::

    apiVersion: dra-portal/v1
    kind: PortalConfiguration
    tenants:
      - slug: team-a
        name: Team A
        namespaces: [gpu-test1, gpu-test2]
        members: {alice: tenant_admin, bob: member}
        quotas:
          gpu.nvidia.com: {max_devices: 8, max_lease: 7d, approve_above_devices: 4}

Rules: a field a tenant entry leaves out is not managed (it keeps its value); a namespace,
member, quota or tenant the document does not name is removed only with ``prune``. A document
with any problem (an unknown field, a class the cluster lacks, a user who does not exist, a
namespace another tenant owns) is refused whole with every problem listed, nothing changed.
Applying the same document twice changes nothing and records nothing. Memberships the identity
provider manages are left to it, even with ``prune``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import ValidationError
from django.db import transaction

from portal.models import AuditEvent, Membership, Quota, Tenant
from portal.models.roles import Role
from portal.services import tenants as services
from portal.services.configuration_reading import (
    API_VERSION,
    KIND,
    QUOTA_FIELDS,
    TENANT_FIELDS,
    TenantSpec,
    read_document,
)
from toolkit.durations import format_duration
from toolkit.quantities import format_bytes

__all__ = [
    "API_VERSION",
    "KIND",
    "Change",
    "ConfigurationRefused",
    "Outcome",
    "Section",
    "apply_configuration",
    "current_configuration",
    "register_section",
]


class ConfigurationRefused(Exception):
    """The document is refused whole; ``problems`` are ``(path, message)`` pairs."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__(f"{len(problems)} problem(s) in the configuration")
        self.problems = problems


@dataclass(frozen=True, slots=True)
class Change:
    """One change of a plan: ``op`` create/update/delete of ``kind`` (tenant, namespace,
    member, quota) named ``name`` in ``tenant``; ``fields`` maps a field to (before, after)."""

    op: str
    kind: str
    tenant: str
    name: str
    fields: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "kind": self.kind,
            "tenant": self.tenant,
            "name": self.name,
            "values": {key: {"before": b, "after": a} for key, (b, a) in self.fields.items()},
        }


@dataclass(frozen=True, slots=True)
class Outcome:
    changes: list[Change]
    applied: bool


@dataclass(frozen=True, slots=True)
class Section:
    """A part of the document an app above the tenancy layer owns (the claims app's
    ``class_policies``), so this module names no app above it. ``read`` checks the section's
    value (appending ``(path, message)`` problems) and answers it parsed; ``plan`` answers its
    changes (``tenant`` empty); ``apply`` makes them, inside the apply's transaction, through
    the app's services; ``export`` answers the section as the portal has it."""

    key: str
    read: Callable[[Any, list[tuple[str, str]]], Any]
    plan: Callable[[Any, bool], list[Change]]
    apply: Callable[[User | AnonymousUser | None, Any, list[Change]], None]
    export: Callable[[], Any]


SECTIONS: dict[str, Section] = {}


def register_section(section: Section) -> None:
    """Called from an app's ``ready()``."""
    SECTIONS[section.key] = section


# --- planning ----------------------------------------------------------------------------------


def _shown(value: Any, field: str = "") -> Any:
    """A value as the document writes it (``7d``, ``640Gi``)."""
    if isinstance(value, dt.timedelta):
        return format_duration(value)
    if field.endswith("_memory") and isinstance(value, int):
        return format_bytes(value)
    return value


def _quota_values(quota: Quota) -> dict[str, Any]:
    return {key: getattr(quota, key) for key in QUOTA_FIELDS}


def _plan(specs: list[TenantSpec], prune: bool, problems: list[tuple[str, str]]) -> list[Change]:
    users = {
        user.username: user
        for user in get_user_model()._default_manager.filter(
            username__in={name for spec in specs for name in (spec.members or {})}
        )
    }
    tenants = {
        tenant.slug: tenant
        for tenant in Tenant.objects.prefetch_related("namespaces", "quotas", "memberships__user")
    }
    owners = {name: tenant.slug for tenant in tenants.values() for name in tenant.namespace_names}
    changes: list[Change] = []
    for spec in specs:
        tenant = tenants.get(spec.slug)
        if tenant is None:
            if "name" not in spec.fields:
                problems.append((f"{spec.path}.name", "A new tenant needs a name."))
            changes.append(
                Change(
                    "create",
                    "tenant",
                    spec.slug,
                    spec.slug,
                    {key: (None, _shown(value)) for key, value in spec.fields.items()},
                )
            )
        else:
            differing = {
                key: (_shown(getattr(tenant, key)), _shown(value))
                for key, value in spec.fields.items()
                if getattr(tenant, key) != value
            }
            if differing:
                changes.append(Change("update", "tenant", spec.slug, spec.slug, differing))
        current_namespaces = set(tenant.namespace_names) if tenant else set()
        if spec.namespaces is not None:
            for name in spec.namespaces:
                owner = owners.get(name)
                if owner is not None and owner != spec.slug and _keeps(owner, name, specs, prune):
                    problems.append(
                        (
                            f"{spec.path}.namespaces",
                            f"Namespace {name} already belongs to tenant {owner}.",
                        )
                    )
                if name not in current_namespaces:
                    changes.append(Change("create", "namespace", spec.slug, name))
            if prune:
                for name in sorted(current_namespaces - set(spec.namespaces)):
                    changes.append(Change("delete", "namespace", spec.slug, name))
        memberships = {m.user.username: m for m in tenant.memberships.all()} if tenant else {}
        if spec.members is not None:
            for username, role in spec.members.items():
                if username not in users:
                    problems.append(
                        (
                            f"{spec.path}.members.{username}",
                            f"There is no user named “{username[:150]}”.",
                        )
                    )
                    continue
                membership = memberships.get(username)
                if membership is None:
                    changes.append(
                        Change("create", "member", spec.slug, username, {"role": (None, role)})
                    )
                elif membership.role != role:
                    changes.append(
                        Change(
                            "update",
                            "member",
                            spec.slug,
                            username,
                            {"role": (membership.role, role)},
                        )
                    )
            if prune:
                for username, membership in sorted(memberships.items()):
                    if username not in spec.members and not membership.is_from_identity_provider:
                        changes.append(
                            Change(
                                "delete",
                                "member",
                                spec.slug,
                                username,
                                {"role": (membership.role, None)},
                            )
                        )
        quotas = {quota.device_class_name: quota for quota in tenant.quotas.all()} if tenant else {}
        if spec.quotas is not None:
            for class_name, values in spec.quotas.items():
                quota = quotas.get(class_name)
                before = _quota_values(quota) if quota else {}
                differing = {
                    key: (_shown(before.get(key), key) if quota else None, _shown(value, key))
                    for key, value in values.items()
                    if quota is None or before[key] != value
                }
                if quota is None:
                    changes.append(Change("create", "quota", spec.slug, class_name, differing))
                elif differing:
                    changes.append(Change("update", "quota", spec.slug, class_name, differing))
            if prune:
                for class_name in sorted(set(quotas) - set(spec.quotas)):
                    changes.append(Change("delete", "quota", spec.slug, class_name))
    if prune:
        named = {spec.slug for spec in specs}
        for slug, tenant in sorted(tenants.items()):
            if slug not in named:
                refusal = services.deletion_refusal(tenant)
                if refusal is not None:
                    problems.append(("tenants", f"Pruning tenant {slug}: {refusal}"))
                changes.append(Change("delete", "tenant", slug, slug))
    return changes


def _keeps(owner: str, name: str, specs: list[TenantSpec], prune: bool) -> bool:
    """Whether ``owner`` still holds namespace ``name`` after the document: it does unless the
    document (with ``prune``) takes it away from the owner, or prunes the owner itself."""
    for spec in specs:
        if spec.slug == owner:
            return spec.namespaces is None or name in spec.namespaces or not prune
    return not prune


# --- applying ----------------------------------------------------------------------------------


def _refusal(path: str, error: ValidationError) -> ConfigurationRefused:
    """A service's refusal, with the document path of the entry that caused it."""
    by_field = error.message_dict if hasattr(error, "error_dict") else {"": error.messages}
    return ConfigurationRefused(
        [
            (f"{path}.{key}" if key and key != "__all__" else path, message)
            for key, messages in by_field.items()
            for message in messages
        ]
    )


def _apply(
    actor: User | AnonymousUser | None, specs: list[TenantSpec], changes: list[Change], prune: bool
) -> None:
    touched = {change.tenant for change in changes}
    # Removals first, so a namespace can move from one tenant to another in one document.
    for change in changes:
        if change.kind == "tenant" and change.op == "delete":
            try:
                services.delete_tenant(actor=actor, tenant=Tenant.objects.get(slug=change.tenant))
            except ValidationError as error:
                raise _refusal("tenants", error) from error
    users = {
        user.username: user
        for user in get_user_model()._default_manager.filter(
            username__in={change.name for change in changes if change.kind == "member"}
        )
    }
    if prune:
        for spec in specs:
            tenant = Tenant.objects.filter(slug=spec.slug).first()
            if tenant is not None and spec.namespaces is not None and spec.slug in touched:
                kept = sorted(set(tenant.namespace_names) & set(spec.namespaces))
                if kept != sorted(tenant.namespace_names):
                    services.save_tenant(actor=actor, tenant=tenant, namespaces=kept)
    for spec in specs:
        if spec.slug in touched:
            try:
                _apply_tenant(actor, spec, [c for c in changes if c.tenant == spec.slug], users)
            except ValidationError as error:
                raise _refusal(spec.path, error) from error


def _apply_tenant(
    actor: User | AnonymousUser | None,
    spec: TenantSpec,
    changes: list[Change],
    users: dict[str, User],
) -> None:
    tenant = Tenant.objects.filter(slug=spec.slug).first()
    namespaces = None
    if spec.namespaces is not None:
        current = set(tenant.namespace_names) if tenant else set()
        pruned = any(c.kind == "namespace" and c.op == "delete" for c in changes)
        namespaces = spec.namespaces if pruned else sorted(current | set(spec.namespaces))
    tenant = services.save_tenant(actor=actor, tenant=tenant, namespaces=namespaces, **spec.fields)
    for change in changes:
        if change.kind == "member" and change.op in ("create", "update"):
            role = Role(change.fields["role"][1])
            try:
                services.set_member(actor=actor, tenant=tenant, user=users[change.name], role=role)
            except ValidationError as error:
                raise ValidationError({f"members.{change.name}": error.messages}) from error
        elif change.kind == "quota" and change.op in ("create", "update"):
            limits = (spec.quotas or {})[change.name]
            services.save_quota(actor=actor, tenant=tenant, device_class_name=change.name, **limits)
    for change in changes:
        if change.op != "delete":
            continue
        if change.kind == "member":
            membership = Membership.objects.get(tenant=tenant, user__username=change.name)
            try:
                services.remove_member(actor=actor, membership=membership)
            except ValidationError as error:
                raise ValidationError({f"members.{change.name}": error.messages}) from error
        elif change.kind == "quota":
            quota = Quota.objects.get(tenant=tenant, device_class_name=change.name)
            services.delete_quota(actor=actor, quota=quota)


def apply_configuration(
    *,
    actor: User | AnonymousUser | None,
    document: Any,
    prune: bool = False,
    dry_run: bool = False,
) -> Outcome:
    """Plan (``dry_run``) or apply a configuration document; raises :class:`ConfigurationRefused`
    with every problem and changes nothing when any part of it is wrong."""
    problems: list[tuple[str, str]] = []
    specs = read_document(document, problems, set(SECTIONS))
    if any(path in ("", "apiVersion", "kind", "tenants") for path, _ in problems):
        raise ConfigurationRefused(problems)  # not a document: nothing more to check
    sections = {
        key: section.read(document[key], problems)
        for key, section in SECTIONS.items()
        if key in document
    }
    with transaction.atomic():
        # Planned and applied under the tenant table's lock: two applies queue, never interleave.
        list(Tenant.objects.select_for_update().values_list("pk", flat=True))
        changes = _plan(specs, prune, problems)
        section_changes = {key: SECTIONS[key].plan(value, prune) for key, value in sections.items()}
        if problems:
            raise ConfigurationRefused(problems)
        everything = changes + [c for found in section_changes.values() for c in found]
        if dry_run or not everything:
            return Outcome(everything, applied=False)
        _apply(actor, specs, changes, prune)
        for key, found in section_changes.items():
            if found:
                try:
                    SECTIONS[key].apply(actor, sections[key], found)
                except ValidationError as error:
                    raise _refusal(key, error) from error
        # One event for the whole document (each object's own event is recorded too).
        AuditEvent.objects.create(
            actor=actor if actor is not None and actor.is_authenticated else None,
            actor_name=actor.get_username() if actor is not None else "",
            action=AuditEvent.Action.CONFIGURATION_APPLIED,
            object_type="configuration",
            object_repr=f"Configuration applied: {len(everything)} change(s)"[:300],
            after={"prune": prune, "changes": [change.as_dict() for change in everything]},
        )
    return Outcome(everything, applied=True)


def current_configuration() -> dict[str, Any]:
    """The document that describes the portal as it is (a start for the file kept in git)."""
    queryset = Tenant.objects.all()
    entries = []
    for tenant in queryset.order_by("slug").prefetch_related(
        "namespaces", "quotas", "memberships__user"
    ):
        entry: dict[str, Any] = {"slug": tenant.slug}
        for key in TENANT_FIELDS:
            value = getattr(tenant, key)
            entry[key] = format_duration(value) if isinstance(value, dt.timedelta) else value
        entry["namespaces"] = sorted(tenant.namespace_names)
        entry["members"] = {
            m.user.username: m.role
            for m in sorted(tenant.memberships.all(), key=lambda m: m.user.username)
            if not m.is_from_identity_provider
        }
        entry["quotas"] = {
            quota.device_class_name: {
                key: _shown(value, key) for key, value in _quota_values(quota).items()
            }
            for quota in sorted(tenant.quotas.all(), key=lambda q: q.device_class_name)
        }
        entries.append(entry)
    document: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND, "tenants": entries}
    for key, section in sorted(SECTIONS.items()):
        document[key] = section.export()
    return document
