"""``Device.state``: the state every list filters and shows, kept by the mirror.

Computing it per query (does any claim hold this device? is that claim shared?) joined every
device with every allocation on each page view. The store recomputes it instead, for exactly
the devices a change can affect: the devices of changed slices, and the devices named in the
results of changed or deleted claims, before and after the change.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection
from django.db.models import Case, CharField, Exists, F, OuterRef, Q, QuerySet, Value, When

from devices.models import Device, DeviceState

__all__ = ["DeviceKey", "claim_device_keys", "computed_state", "refresh_states"]

DeviceKey = tuple[str, str, str]  # driver, pool, device name
# Above this many keys one pass over every device is cheaper than narrowing.
ALL_DEVICES_THRESHOLD = 5000


def computed_state() -> Case:
    """Tainted, then shared, then allocated, then free; admin-access results hold nothing."""
    from claims.models import AllocatedDevice

    holds = AllocatedDevice.objects.filter(
        driver=OuterRef("driver"),
        pool=OuterRef("pool_name"),
        device_name=OuterRef("name"),
        admin_access=False,
    )
    shared = holds.filter(~Q(share_id="") | Q(claim__consumer_count__gt=1))
    return Case(
        When(is_tainted=True, then=Value(DeviceState.TAINTED.value)),
        When(Exists(shared), then=Value(DeviceState.SHARED.value)),
        When(Exists(holds), then=Value(DeviceState.ALLOCATED.value)),
        default=Value(DeviceState.FREE.value),
        output_field=CharField(),
    )


def claim_device_keys(claim_filter: Q) -> set[DeviceKey]:
    """The devices named by the allocation results of the claims matching ``claim_filter``."""
    from claims.models import AllocatedDevice

    return set(
        AllocatedDevice.objects.filter(claim_filter).values_list("driver", "pool", "device_name")
    )


def refresh_states(devices: QuerySet[Device] | None = None, keys: Iterable[DeviceKey] = ()) -> int:
    """Recomputes the state of ``devices`` and of the devices with ``keys``.

    Call inside the transaction that changed claims or slices.
    """
    keys = set(keys)
    updated = 0
    if devices is not None:
        updated += _update_changed(devices)
    if len(keys) > ALL_DEVICES_THRESHOLD:
        return updated + _update_changed(Device.objects.all())
    if keys and connection.vendor == "postgresql":
        updated += _refresh_keys_postgresql(sorted(keys))
    elif keys:
        # A superset (same pools and names) is refreshed: correct, and one indexed query.
        candidates = Device.objects.filter(
            pool_name__in={pool for _, pool, _ in keys}, name__in={name for _, _, name in keys}
        )
        updated += candidates.update(state=computed_state())
    return updated


def _update_changed(devices: QuerySet[Device]) -> int:
    """Writes the state of the devices whose stored state is not the computed one."""
    stale = devices.annotate(expected=computed_state()).exclude(state=F("expected"))
    return Device.objects.filter(pk__in=stale.values("pk")).update(state=computed_state())


# ``computed_state`` in SQL, for exactly the given keys, writing only rows whose state changes
# (the exactness test compares the result with ``computed_state`` on PostgreSQL).
_REFRESH_KEYS_SQL = """
WITH wanted AS (
  SELECT d.id, CASE
    WHEN d.is_tainted THEN 'tainted'
    WHEN EXISTS (
      SELECT 1 FROM claims_allocateddevice a JOIN claims_resourceclaim c ON c.id = a.claim_id
      WHERE a.driver = d.driver AND a.pool = d.pool_name AND a.device_name = d.name
        AND NOT a.admin_access AND (a.share_id <> '' OR c.consumer_count > 1)
    ) THEN 'shared'
    WHEN EXISTS (
      SELECT 1 FROM claims_allocateddevice a
      WHERE a.driver = d.driver AND a.pool = d.pool_name AND a.device_name = d.name
        AND NOT a.admin_access
    ) THEN 'allocated'
    ELSE 'free' END AS state
  FROM devices_device d
  JOIN unnest(%s::text[], %s::text[], %s::text[]) AS k(driver, pool, name)
    ON d.driver = k.driver AND d.pool_name = k.pool AND d.name = k.name
)
UPDATE devices_device d SET state = wanted.state
FROM wanted WHERE d.id = wanted.id AND d.state <> wanted.state
"""


def _refresh_keys_postgresql(keys: list[DeviceKey]) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            _REFRESH_KEYS_SQL,
            [[k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys]],
        )
        return cursor.rowcount
