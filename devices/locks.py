"""The one lock of the inventory's writers."""

from __future__ import annotations

from django.db import connection

__all__ = ["lock_device_writes"]

# pg_advisory_xact_lock key held by every transaction writing slices or claims ("dradevic").
_DEVICE_WRITES_LOCK = 0x6472616465766963


def lock_device_writes() -> None:
    """Takes, until the transaction ends, the lock every writer of device rows and what derives
    from them holds (PostgreSQL; SQLite's transactions take the one write lock anyway): the
    slice and claim watchers both update device states and allocation results, in different
    orders, and would otherwise deadlock each other under load; the membership refresh
    (``mirror.classes``) checks and writes a device's memberships while its slice holds still;
    the tenants' usage counters (``claims.models.usage_counters``) are added to, moved between
    tenants and checked under it, so each sees the results the others committed."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_DEVICE_WRITES_LOCK])
