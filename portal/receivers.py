"""What the tenancy domain does on signals from outside it: django-axes' lockouts."""

from __future__ import annotations

from typing import Any

from axes.signals import user_locked_out
from django.dispatch import receiver

from portal.services.sign_in import record_lockout
from toolkit.client_address import client_address

__all__ = ["audit_lockout"]


@receiver(user_locked_out, dispatch_uid="portal.audit_lockout")
def audit_lockout(sender: Any, request: Any, username: str | None, **kwargs: Any) -> None:
    """A sign-in lockout goes into the audit trail (once per lockout)."""
    address = kwargs.get("ip_address") or client_address(request)
    failures = getattr(request, "axes_failures_since_start", None)
    record_lockout(username=username or "", address=address, failures=failures)
