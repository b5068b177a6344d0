"""Password sign-in lockouts (django-axes): the audit trail of a lockout.

Axes counts failed sign-ins per username and client address and locks the pair out after
``AXES_FAILURE_LIMIT`` of them for ``AXES_COOLOFF_TIME`` (``portal.settings``); every try while
locked out is refused and starts the cool-off again. Each lockout is recorded once as a
``sign_in_locked_out`` audit event (portal admins see it: it belongs to no tenant), however
often the locked-out pair keeps trying.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from portal.models import AuditEvent
from portal.services.audit import record_event

__all__ = ["record_lockout"]


def record_lockout(*, username: str, address: str, failures: int | None) -> AuditEvent | None:
    """Records that ``username`` is locked out of signing in from ``address``; None when this
    lockout was recorded already (within one cool-off of the last record). The event's object
    is the user, or the name as typed when no such user exists (``object_id`` empty)."""
    cool_off: timedelta = settings.AXES_COOLOFF_TIME
    User = get_user_model()
    with transaction.atomic():
        recorded = AuditEvent.objects.filter(
            action=AuditEvent.Action.SIGN_IN_LOCKED_OUT,
            object_type=User._meta.label,
            object_repr=username[:300],
            after__address=address,
            created_at__gte=timezone.now() - cool_off,
        )
        if recorded.exists():
            return None
        user = User._default_manager.filter(**{User.USERNAME_FIELD: username}).first()
        after: dict[str, Any] = {
            "locked_out": True,
            "address": address,
            "failures": failures,
            "cool_off_seconds": int(cool_off.total_seconds()),
        }
        return record_event(
            actor=None,
            action=AuditEvent.Action.SIGN_IN_LOCKED_OUT,
            obj=user if user is not None else User(**{User.USERNAME_FIELD: username}),
            before={"locked_out": False},
            after=after,
        )
