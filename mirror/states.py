"""``Device.state`` and ``Device.state_reason``: what the allocator would do with each device.

The mirror keeps both columns current for exactly the pools a change can affect: the pools of
changed or deleted slices, and the pools named by the results of changed or deleted claims,
before and after the change. A pool's states depend on each other (shared counters, pool
validity), so a pool is always recomputed whole, with ``dra.allocator.availability`` — the
allocator's own rules — from the slices' stored objects and the claims' result rows.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from typing import Any

from django.apps import apps as global_apps
from django.apps.registry import Apps
from django.utils import timezone

from dra.allocator.availability import Availability, Holding, State, device_availability
from dra.features import PORTAL_FEATURES
from dra.model import AllocatedDevice as Result
from dra.model import InvalidObject, ResourceSlice, parse_slice
from dra.quantity import QuantityError, parse_quantity
from kube.kinds import Kind

__all__ = [
    "STATE_KINDS",
    "DeviceKey",
    "PoolKey",
    "all_pools",
    "record_changes",
    "refresh_all_states",
    "refresh_pools",
    "remember_parsed",
]

DeviceKey = tuple[str, str, str]  # driver, pool, device name
PoolKey = tuple[str, str]  # driver, pool
POOLS_PER_QUERY = 500
# The kinds whose rows device states derive from.
STATE_KINDS = frozenset({Kind.RESOURCE_SLICES, Kind.RESOURCE_CLAIMS})
# Parsed slices by uid, with the resourceVersion they were parsed at: a slice is parsed once
# per version, however many claim changes touch its pool, and only its newest version is kept
# (keyed by version, every metadata update of a slice kept another parsed copy: +70 MiB of
# watcher RSS in a minute of watch at 5,000 nodes). Bounded; the oldest entries go first. A
# string is the reason a slice could not be parsed.
_PARSED: OrderedDict[str, tuple[str, Any]] = OrderedDict()
_PARSED_LIMIT = 20_000


def refresh_pools(pools: Iterable[PoolKey], *, apps: Apps = global_apps) -> int:
    """Recomputes the state of every device of ``pools``; returns the rows whose state changed.

    Call inside the transaction that changed the slices or claims. ``apps`` lets a data
    migration run it on its historical models.
    """
    pools = sorted(set(pools))
    record_changes(pools, apps=apps)
    changed = 0
    for start in range(0, len(pools), POOLS_PER_QUERY):
        changed += _refresh_chunk(set(pools[start : start + POOLS_PER_QUERY]), apps)
    return changed


def all_pools(*, apps: Apps = global_apps) -> set[PoolKey]:
    """Every pool the mirror holds a slice of."""
    resource_slice = apps.get_model("devices", "ResourceSlice")
    return set(resource_slice.objects.values_list("driver", "pool_name").distinct())


def refresh_all_states(*, apps: Apps = global_apps) -> int:
    """Recomputes every device's state (after an upgrade that changed the rules)."""
    return refresh_pools(all_pools(apps=apps), apps=apps)


def _refresh_chunk(pools: set[PoolKey], apps: Apps) -> int:
    resource_slice = apps.get_model("devices", "ResourceSlice")
    device_model = apps.get_model("devices", "Device")
    allocated = apps.get_model("claims", "AllocatedDevice")
    drivers, names = {d for d, _ in pools}, {p for _, p in pools}
    slices: list[Any] = []
    unreadable: dict[int, str] = {}
    slice_names: dict[int, str] = {}
    versions: dict[int, tuple[str, str]] = {}
    for pk, name, driver, pool, uid, version in resource_slice.objects.filter(
        driver__any=drivers, pool_name__any=names
    ).values_list("pk", "name", "driver", "pool_name", "uid", "resource_version"):
        if (driver, pool) in pools:
            slice_names[pk] = name
            versions[pk] = (uid, version)
    # Read from the cache once: another watcher thread may evict entries meanwhile.
    found: dict[int, Any] = {pk: _parsed_at(*key) for pk, key in versions.items()}
    missing = [pk for pk, parsed in found.items() if parsed is None]
    for pk, raw in resource_slice.objects.filter(pk__any=missing).values_list("pk", "raw"):
        try:
            found[pk] = parse_slice(raw, slice_names[pk])
        except InvalidObject as error:
            found[pk] = f"slice unreadable: {error}"[:500]
        _remember(versions[pk], found[pk])
    for pk, parsed in found.items():
        if isinstance(parsed, str):
            unreadable[pk] = parsed
        elif parsed is not None:
            slices.append(parsed)
    holdings = [
        Holding(_result(row[:6]), consumers=row[6])
        for row in allocated.objects.filter(driver__any=drivers, pool__any=names).values_list(
            "driver",
            "pool",
            "device_name",
            "admin_access",
            "share_id",
            "consumed_capacity",
            "claim__consumer_count",
        )
        if (row[0], row[1]) in pools
    ]
    availability = device_availability(slices, holdings, PORTAL_FEATURES)
    updates: dict[tuple[str, str], list[int]] = defaultdict(list)
    for pk, slice_id, name, state, reason in device_model.objects.filter(
        resource_slice_id__any=list(slice_names)
    ).values_list("pk", "resource_slice_id", "name", "state", "state_reason"):
        wanted = availability.get((slice_names[slice_id], name)) or Availability(
            State.BLOCKED, unreadable.get(slice_id, "not offered by its slice")
        )
        if (state, reason) != (wanted.state.value, wanted.reason):
            updates[(wanted.state.value, wanted.reason)].append(pk)
    for (state, reason), pks in updates.items():
        device_model.objects.filter(pk__any=pks).update(state=state, state_reason=reason)
    return sum(len(pks) for pks in updates.values())


def record_changes(
    pools: Iterable[PoolKey] = (), scope: str = "pool", *, apps: Apps = global_apps
) -> None:
    """Appends to the inventory change log that warm indexes follow (``claims.capacity.index``): one
    row per pool, or one row for ``scope`` ("deviceclasses", "nodes") when no pools are given."""
    try:
        change = apps.get_model("devices", "InventoryChange")
    except LookupError:  # a data migration older than the log
        return
    now = timezone.now()
    if scope != "pool":
        change.objects.create(scope=scope, created_at=now)
        return
    change.objects.bulk_create(
        [change(scope="pool", driver=d, pool_name=p, created_at=now) for d, p in sorted(set(pools))]
    )


def remember_parsed(uid: str, resource_version: str, parsed: ResourceSlice) -> None:
    """Keeps a slice the mapping already parsed, so its pool's refresh need not parse it."""
    _remember((uid, resource_version), parsed)


def _remember(key: tuple[str, str], parsed: Any) -> None:
    uid, version = key
    _PARSED[uid] = (version, parsed)
    _PARSED.move_to_end(uid)
    while len(_PARSED) > _PARSED_LIMIT:
        _PARSED.popitem(last=False)


def _parsed_at(uid: str, version: str) -> Any:
    """The slice ``uid`` as parsed at ``version``, or None."""
    kept = _PARSED.get(uid)
    return kept[1] if kept is not None and kept[0] == version else None


def _result(row: tuple[Any, ...]) -> Result:
    driver, pool, device, admin_access, share_id, consumed = row
    quantities = {}
    if isinstance(consumed, dict):
        for name, value in consumed.items():
            try:
                quantities[str(name)] = parse_quantity(str(value))
            except QuantityError:
                continue
    return Result(driver, pool, device, bool(admin_access), share_id or None, quantities)
