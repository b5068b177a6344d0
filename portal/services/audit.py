"""Recording audit events. Every service that changes tenancy data calls ``record_event``."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import models, transaction
from django.forms.models import model_to_dict

from portal.models import AuditEvent, Tenant

__all__ = ["audited_delete", "record_event", "record_saved", "snapshot"]


def _json_safe(value: Any) -> Any:
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, models.Model):
        return value.pk
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    return value


def snapshot(instance: models.Model, fields: list[str] | None = None) -> dict[str, Any]:
    """A JSON-safe copy of the instance's field values, for an audit event's before/after."""
    return {key: _json_safe(value) for key, value in model_to_dict(instance, fields).items()}


def record_event(
    *,
    actor: User | AnonymousUser | None,
    action: AuditEvent.Action,
    obj: models.Model,
    tenant: Tenant | None = None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> AuditEvent:
    """Appends one event to the trail. Call inside the transaction that makes the change."""
    return AuditEvent.objects.create(
        actor=actor if actor is not None and actor.is_authenticated else None,
        actor_name=actor.get_username() if actor is not None else "",
        action=action,
        tenant=tenant,
        object_type=obj._meta.label,
        object_id=str(obj.pk or ""),
        object_repr=str(obj)[:300],
        before=before,
        after=after,
    )


def record_saved(
    *,
    actor: User | AnonymousUser | None,
    obj: models.Model,
    before: dict[str, Any] | None,
    after: dict[str, Any],
    tenant: Tenant | None = None,
) -> bool:
    """The one audit of a save: ``created`` when there was nothing ``before``, ``updated``
    otherwise, nothing when nothing changed. Call inside the transaction that saved ``obj``;
    answers whether an event was recorded."""
    if before == after:
        return False
    record_event(
        actor=actor,
        action=AuditEvent.Action.CREATED if before is None else AuditEvent.Action.UPDATED,
        obj=obj,
        tenant=tenant,
        before=before,
        after=after,
    )
    return True


def audited_delete(
    *,
    actor: User | AnonymousUser | None,
    obj: models.Model,
    before: dict[str, Any],
    tenant: Tenant | None = None,
) -> None:
    """The one audited delete: the event (with what ``obj`` was) and the delete commit
    together."""
    with transaction.atomic():
        record_event(
            actor=actor, action=AuditEvent.Action.DELETED, obj=obj, tenant=tenant, before=before
        )
        obj.delete()
