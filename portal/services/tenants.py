"""Tenants, their namespaces, members and quotas: the audited write paths.

Each function checks nothing about who may call it: permission is the caller's gate
(``Tenant.objects.administered_by`` / staff). Each records an audit event in the same
transaction as the change, and is safe to retry: saving identical values changes nothing and
records nothing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils.text import slugify

from portal.inventory import device_classes
from portal.models import AuditEvent, Membership, Quota, Tenant, TenantNamespace
from portal.models.roles import Role
from portal.models.validators import DNS_SUBDOMAIN
from portal.services.audit import audited_delete, record_event, record_saved, snapshot
from portal.signals import namespaces_changed, quotas_changed

__all__ = [
    "LastTenantAdminError",
    "QUOTA_FIELDS",
    "TenantInUseError",
    "add_member",
    "cluster_device_class_names",
    "delete_quota",
    "delete_tenant",
    "deletion_refusal",
    "remove_member",
    "save_quota",
    "save_tenant",
    "set_member",
    "set_tenant_namespaces",
    "sync_provider_memberships",
    "validate_quota",
]

TENANT_FIELDS = [
    "name",
    "slug",
    "description",
    "requires_approval",
    "resource_quota_backstop",
    "max_token_lifetime",
    "webhook_url",
]
MAX_NAMESPACES_PER_TENANT = 100
MAX_LEASE = dt.timedelta(days=3650)
QUOTA_FIELDS = [
    "device_class_name",
    "max_devices",
    "max_device_memory",
    "max_claims",
    "max_lease",
    "approve_above_devices",
    "approve_above_memory",
    "approve_above_lease",
    "approve_over_quota",
]


def _tenant_state(tenant: Tenant) -> dict[str, Any]:
    state = snapshot(tenant, TENANT_FIELDS)
    state["namespaces"] = sorted(tenant.namespace_names)
    # The secret itself never goes into the trail; whether one is set (and that it changed) does.
    state["webhook_secret"] = (
        hashlib.sha256(tenant.webhook_secret.encode()).hexdigest()[:8]
        if tenant.webhook_secret
        else ""
    )
    return state


def save_tenant(
    *,
    actor: User | AnonymousUser | None,
    tenant: Tenant | None,
    namespaces: list[str] | None = None,
    **fields: Any,
) -> Tenant:
    """Creates (``tenant=None``) or updates a tenant and, when given, its namespace list."""
    lifetime = fields.get("max_token_lifetime")
    if lifetime is not None and lifetime <= dt.timedelta(0):
        raise ValidationError(
            {"max_token_lifetime": "A token lifetime limit must be longer than zero (blank: none)."}
        )
    with transaction.atomic():
        creating = tenant is None
        if tenant is None:
            tenant = Tenant(**fields)
            before = None
        else:
            tenant = Tenant.objects.select_for_update().get(pk=tenant.pk)
            before = _tenant_state(tenant)
            for key, value in fields.items():
                setattr(tenant, key, value)
        if not tenant.slug:
            tenant.slug = slugify(tenant.name)[:63]
        tenant.full_clean()
        tenant.save()
        if namespaces is not None:
            _replace_namespaces(tenant, namespaces)
        after = _tenant_state(tenant)
        if creating or before != after:
            quotas_changed.send(sender=Tenant, tenant_id=tenant.pk)
            record_event(
                actor=actor,
                action=AuditEvent.Action.CREATED if creating else AuditEvent.Action.UPDATED,
                obj=tenant,
                tenant=tenant,
                before=before,
                after=after,
            )
    return tenant


def _replace_namespaces(tenant: Tenant, names: list[str]) -> None:
    wanted = sorted({name.strip() for name in names if name.strip()})
    if len(wanted) > MAX_NAMESPACES_PER_TENANT:
        raise ValidationError(
            {"namespaces": [f"A tenant owns at most {MAX_NAMESPACES_PER_TENANT} namespaces."]}
        )
    taken = dict(
        TenantNamespace.objects.filter(name__in=wanted)
        .exclude(tenant=tenant)
        .values_list("name", "tenant__name")
    )
    if taken:
        raise ValidationError(
            {
                "namespaces": [
                    f"Namespace {name} already belongs to tenant {owner}."
                    for name, owner in sorted(taken.items())
                ]
            }
        )
    existing = set(tenant.namespaces.values_list("name", flat=True))
    for name in wanted:
        if name not in existing:
            TenantNamespace(tenant=tenant, name=name).full_clean(exclude=["tenant"])
    tenant.namespaces.exclude(name__in=wanted).delete()
    TenantNamespace.objects.bulk_create(
        [TenantNamespace(tenant=tenant, name=name) for name in wanted if name not in existing]
    )
    changed = existing.symmetric_difference(wanted)
    if changed:
        namespaces_changed.send(sender=Tenant, names=sorted(changed))


def set_tenant_namespaces(
    *, actor: User | AnonymousUser | None, tenant: Tenant, namespaces: list[str]
) -> Tenant:
    """Makes ``namespaces`` exactly the tenant's namespace list (audited as a tenant update)."""
    return save_tenant(actor=actor, tenant=tenant, namespaces=namespaces)


class TenantInUseError(ValidationError):
    """Deleting a tenant that rows it cannot take along still belong to (its claim requests)."""


def deletion_refusal(tenant: Tenant) -> str | None:
    """Why ``tenant`` cannot be deleted, or None when it can.

    What belongs to a tenant and goes with it (namespaces, members, quotas, its notifications)
    is deleted with it; rows that refer to it with ``on_delete=PROTECT`` are kept whatever
    their state (the claim requests are its history), so while any exist the tenant stays.
    Found from the model's relations, so the tenancy layer names no app above it."""
    held = []
    for relation in Tenant._meta.related_objects:
        if relation.on_delete is not models.PROTECT:
            continue
        related = relation.related_model._meta
        count = relation.related_model._default_manager.filter(
            **{relation.field.name: tenant}
        ).count()
        if count:
            held.append(
                f"{count} {related.verbose_name if count == 1 else related.verbose_name_plural}"
            )
    if not held:
        return None
    return (
        f"{tenant.name} cannot be deleted: {' and '.join(held)} still belong to it, and are "
        "kept as its history whatever their state. To retire the tenant, remove its members, "
        "namespaces and quotas instead."
    )


def delete_tenant(*, actor: User | AnonymousUser | None, tenant: Tenant) -> None:
    """Deletes the tenant and what goes with it, audited; raises :class:`TenantInUseError`
    (``deletion_refusal``) with nothing changed when rows it cannot take along refer to it.
    The tenant's row lock orders it with submissions (``claims.requests.services.tenant_lock``), so
    a claim request made meanwhile is either counted or refused for the missing tenant."""
    with transaction.atomic():
        tenant = Tenant.objects.select_for_update().get(pk=tenant.pk)
        refusal = deletion_refusal(tenant)
        if refusal is not None:
            raise TenantInUseError(refusal)
        before = _tenant_state(tenant)
        record_event(actor=actor, action=AuditEvent.Action.DELETED, obj=tenant, before=before)
        tenant.delete()


class LastTenantAdminError(ValidationError):
    """Removing or demoting the tenant's only tenant admin: nobody could manage it after."""


def _refuse_losing_the_last_admin(membership: Membership, field: str) -> None:
    """Raises ``LastTenantAdminError`` when ``membership`` is its tenant's only tenant admin.

    Call inside the transaction, after locking the tenant row: two admins demoting each other
    at once are serialised on it, so the second sees the first's change and is refused.
    """
    if not membership.is_tenant_admin:
        return
    others = (
        Membership.objects.filter(tenant_id=membership.tenant_id, role=Membership.Role.TENANT_ADMIN)
        .exclude(pk=membership.pk)
        .exists()
    )
    if not others:
        raise LastTenantAdminError(
            {
                field: [
                    f"{membership.user.get_username()} is the only tenant admin of "
                    f"{membership.tenant.name}: make another member tenant admin first."
                ]
            }
        )


def set_member(
    *,
    actor: User | AnonymousUser | None,
    tenant: Tenant,
    user: User,
    role: Role,
    source: Membership.Source = Membership.Source.PORTAL,
    keep_an_admin: bool = True,
) -> Membership:
    """Adds ``user`` to the tenant with ``role``, or changes their role.

    A tenant keeps at least one tenant admin: demoting the last one raises
    ``LastTenantAdminError`` (on ``role``), whoever asks, except the identity provider's
    membership sync (``keep_an_admin=False``), whose groups decide. ``source`` is recorded
    on a new membership; an existing one keeps its own.
    """
    with transaction.atomic():
        Tenant.objects.select_for_update().filter(pk=tenant.pk).first()
        membership, created = Membership.objects.select_for_update().get_or_create(
            tenant=tenant, user=user, defaults={"role": role, "source": source}
        )
        before = None if created else {"role": membership.role}
        if not created and membership.role != role:
            if role != Membership.Role.TENANT_ADMIN and keep_an_admin:
                _refuse_losing_the_last_admin(membership, "role")
            membership.role = role
            membership.save(update_fields=["role"])
        if created or before != {"role": role}:
            after = {"user": user.get_username(), "role": str(role)}
            if membership.is_from_identity_provider:
                after["source"] = str(membership.source)
            record_event(
                actor=actor,
                action=AuditEvent.Action.CREATED if created else AuditEvent.Action.UPDATED,
                obj=membership,
                tenant=tenant,
                before=before,
                after=after,
            )
    return membership


def sync_provider_memberships(*, user: User, roles: dict[Tenant, Role]) -> None:
    """Makes the memberships the identity provider manages for ``user`` exactly ``roles``.

    Called at each single sign-on with what the person's groups map to (``OIDC_GROUP_MAP``):
    adds the missing memberships, changes roles and removes the memberships whose group the
    person left; memberships added in the portal are never touched (a tenant the person already
    belongs to by hand keeps that membership and its role). The provider decides, so a
    tenant may be left without a tenant admin. Audited with no actor (the provider).
    """
    with transaction.atomic():
        current = {
            membership.tenant_id: membership
            for membership in Membership.objects.filter(user=user).select_related("tenant")
        }
        for tenant, role in sorted(roles.items(), key=lambda item: item[0].pk):
            existing = current.get(tenant.pk)
            if existing is not None and not existing.is_from_identity_provider:
                continue
            set_member(
                actor=None,
                tenant=tenant,
                user=user,
                role=role,
                source=Membership.Source.IDENTITY_PROVIDER,
                keep_an_admin=False,
            )
        wanted = {tenant.pk for tenant in roles}
        for membership in current.values():
            if membership.is_from_identity_provider and membership.tenant_id not in wanted:
                remove_member(actor=None, membership=membership, keep_an_admin=False)


def add_member(
    *,
    actor: User | AnonymousUser | None,
    tenant: Tenant,
    username: str,
    role: Role = Membership.Role.MEMBER,
) -> Membership:
    """Adds the user named ``username`` to the tenant. Raises ``ValidationError`` on
    ``username`` for a user who does not exist or is already a member (their role is changed
    with :func:`set_member`, not by adding them again)."""
    username = username.strip()
    user = get_user_model()._default_manager.filter(username=username).first()
    if user is None:
        raise ValidationError({"username": [f"There is no user named “{username[:150]}”."]})
    existing = Membership.objects.filter(tenant=tenant, user=user).first()
    if existing is not None:
        raise ValidationError(
            {
                "username": [
                    f"{username} is already a member of {tenant.name} "
                    f"({existing.get_role_display().lower()})."
                ]
            }
        )
    return set_member(actor=actor, tenant=tenant, user=user, role=role)


def remove_member(
    *, actor: User | AnonymousUser | None, membership: Membership, keep_an_admin: bool = True
) -> None:
    """Removes a member. Removing the tenant's last tenant admin raises
    ``LastTenantAdminError``, whoever asks, except the identity provider's membership sync
    (``keep_an_admin=False``)."""
    with transaction.atomic():
        Tenant.objects.select_for_update().filter(pk=membership.tenant_id).first()
        current = Membership.objects.filter(pk=membership.pk).select_related("user", "tenant")
        locked = current.select_for_update(of=("self",)).first()
        if locked is None:
            return  # already removed: nothing to do, nothing to record
        if keep_an_admin:
            _refuse_losing_the_last_admin(locked, "membership")
        record_event(
            actor=actor,
            action=AuditEvent.Action.DELETED,
            obj=locked,
            tenant=locked.tenant,
            before={"user": locked.user.get_username(), "role": locked.role},
        )
        locked.delete()


def cluster_device_class_names() -> set[str]:
    """Names of the DeviceClasses mirrored from the cluster; empty while the mirror has none.

    ``portal`` sits below ``devices``: the devices app tells it (``portal.inventory``).
    """
    return set(device_classes().values_list("name", flat=True))


def validate_quota(*, device_class_name: str, max_lease: dt.timedelta | None) -> None:
    """Refuses a quota the cluster could never apply; raises ``ValidationError`` by field.

    A class the mirrored cluster does not have is refused, naming the classes it does have. While
    the mirror holds no DeviceClass at all (not synced yet, or no driver installed) nothing can
    be checked, so the quota is accepted and pages mark it "class not in cluster"
    (``Quota.objects.with_cluster_presence()``).
    """
    errors: dict[str, str] = {}
    known = cluster_device_class_names()
    if len(device_class_name) > 253 or not DNS_SUBDOMAIN.fullmatch(device_class_name):
        errors["device_class_name"] = (
            "Enter a DeviceClass name: a DNS subdomain of up to 253 lowercase letters, digits, "
            "'-' and '.'."
        )
    elif device_class_name and known and device_class_name not in known:
        errors["device_class_name"] = (
            f"The cluster has no DeviceClass “{device_class_name}”. "
            f"Its classes are: {', '.join(sorted(known))}."
        )
    if max_lease is not None and max_lease <= dt.timedelta(0):
        errors["max_lease"] = "A lease limit must be longer than zero (blank: unlimited)."
    elif max_lease is not None and max_lease > MAX_LEASE:
        errors["max_lease"] = f"A lease limit is at most {MAX_LEASE.days} days (blank: unlimited)."
    if errors:
        raise ValidationError(errors)


def save_quota(
    *,
    actor: User | AnonymousUser | None,
    tenant: Tenant,
    device_class_name: str,
    max_devices: int | None = None,
    max_device_memory: int | None = None,
    max_claims: int | None = None,
    max_lease: dt.timedelta | None = None,
    approve_above_devices: int | None = None,
    approve_above_memory: int | None = None,
    approve_above_lease: dt.timedelta | None = None,
    approve_over_quota: bool = False,
    previous: Quota | None = None,
) -> Quota:
    """Creates or replaces the tenant's quota for one device class (blank limits: unlimited).

    Locks the quota row for the read-compare-write, so concurrent writers (admin, API, pages)
    cannot lose each other's limits. ``previous`` is the quota being edited: when it belonged to
    another tenant or class it is deleted in the same transaction (a quota is keyed by tenant and
    class). Raises ``ValidationError`` as :func:`validate_quota` does.
    """
    validate_quota(device_class_name=device_class_name, max_lease=max_lease)
    values = {
        "max_devices": max_devices,
        "max_device_memory": max_device_memory,
        "max_claims": max_claims,
        "max_lease": max_lease,
        "approve_above_devices": approve_above_devices,
        "approve_above_memory": approve_above_memory,
        "approve_above_lease": approve_above_lease,
        "approve_over_quota": approve_over_quota,
    }
    with transaction.atomic():
        if previous is not None and previous.pk is not None:
            moved = (previous.tenant_id, previous.device_class_name) != (
                tenant.pk,
                device_class_name,
            )
            if moved:
                delete_quota(actor=actor, quota=previous)
        quota = (
            Quota.objects.select_for_update()
            .filter(tenant=tenant, device_class_name=device_class_name)
            .first()
        )
        before = snapshot(quota, QUOTA_FIELDS) if quota else None
        if quota is None:
            quota = Quota(tenant=tenant, device_class_name=device_class_name)
        for key, value in values.items():
            setattr(quota, key, value)
        quota.full_clean()
        after = snapshot(quota, QUOTA_FIELDS)
        if before != after:
            quota.save()
            quotas_changed.send(sender=Tenant, tenant_id=tenant.pk)
            record_saved(actor=actor, obj=quota, tenant=tenant, before=before, after=after)
    return quota


def delete_quota(*, actor: User | AnonymousUser | None, quota: Quota) -> None:
    with transaction.atomic():
        audited_delete(
            actor=actor, obj=quota, tenant=quota.tenant, before=snapshot(quota, QUOTA_FIELDS)
        )
        quotas_changed.send(sender=Tenant, tenant_id=quota.tenant_id)
