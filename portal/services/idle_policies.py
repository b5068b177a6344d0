"""A tenant's idle policy (``portal.IdlePolicy``): written here by every entry point, audited."""

from __future__ import annotations

import datetime as dt
from typing import Any, cast

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import ValidationError
from django.db import models, transaction

from portal.models import IdlePolicy, Tenant
from portal.services.audit import audited_delete, record_saved, snapshot

__all__ = ["IDLE_POLICY_FIELDS", "delete_idle_policy", "save_idle_policy"]

IDLE_POLICY_FIELDS = [
    "reclaim",
    "grace_period",
    "no_consumer_after",
    "utilisation_threshold",
    "low_utilisation_after",
]


def save_idle_policy(
    *, actor: User | AnonymousUser | None, tenant: Tenant, **fields: Any
) -> IdlePolicy:
    """Creates or replaces the tenant's idle policy (fields left out: the portal defaults)."""
    for name in ("grace_period", "no_consumer_after", "low_utilisation_after"):
        value = fields.get(name)
        if value is not None and value <= dt.timedelta(0):
            raise ValidationError({name: "Give a duration longer than zero (blank: the default)."})
    with transaction.atomic():
        policy = IdlePolicy.objects.select_for_update().filter(tenant=tenant).first()
        before = snapshot(policy, IDLE_POLICY_FIELDS) if policy is not None else None
        if policy is None:
            policy = IdlePolicy(tenant=tenant)
        for name in IDLE_POLICY_FIELDS:
            column = cast("models.Field[Any, Any]", IdlePolicy._meta.get_field(name))  # own field
            setattr(policy, name, fields.get(name, column.get_default()))
        policy.full_clean()
        policy.save()
        record_saved(
            actor=actor,
            obj=policy,
            tenant=tenant,
            before=before,
            after=snapshot(policy, IDLE_POLICY_FIELDS),
        )
    return policy


def delete_idle_policy(*, actor: User | AnonymousUser | None, policy: IdlePolicy) -> None:
    """The tenant follows the portal defaults again (reclaim off)."""
    audited_delete(
        actor=actor,
        obj=policy,
        tenant=policy.tenant,
        before=snapshot(policy, IDLE_POLICY_FIELDS),
    )
