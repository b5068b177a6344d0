"""Utilisation of what claims held: per claim, namespace and tenant, per 5-minute and hourly
bucket (``UsageRollup``), from the devices' rollups and the allocation history.

A device counts for a claim for the part of a bucket the claim held it (``AllocationRecord``
from ``started_at`` to ``ended_at``), once per claim however many pods share it (records are
per claim and device), and never for an admin-access observer. Averages are weighted by the
device-seconds behind them; a bucket of a device without a reading adds nothing.
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from claims.models import AllocationRecord, ResourceClaim, UsageRollup
from devices.models import DeviceRollup, Resolution
from toolkit.charts import DEFAULT_RANGE, TimeRange

__all__ = ["ClaimUtilisation", "claim_utilisation", "roll_up_usage"]

_MAX_BUCKETS_PER_RUN = 24 * 12


@dataclass
class _Sum:
    seconds: float = 0.0
    util_seconds: float = 0.0  # seconds behind the utilisation average (readings had one)
    util: float = 0.0
    fb: float = 0.0
    fb_seconds: float = 0.0
    power: float = 0.0
    power_seconds: float = 0.0
    simulated: bool = False
    labels: dict[str, Any] = field(default_factory=dict)

    def add(self, seconds: float, rollup: Mapping[str, Any]) -> None:
        self.seconds += seconds
        if rollup["gpu_util_avg"] is not None:
            self.util += rollup["gpu_util_avg"] * seconds
            self.util_seconds += seconds
        if rollup["fb_used_mib_avg"] is not None:
            self.fb += rollup["fb_used_mib_avg"] * seconds
            self.fb_seconds += seconds
        if rollup["power_w_avg"] is not None:
            self.power += rollup["power_w_avg"] * seconds
            self.power_seconds += seconds
        self.simulated = self.simulated or rollup["device__is_simulated"]

    def averages(self) -> dict[str, Any]:
        return {
            "device_seconds": self.seconds,
            "gpu_util_avg": self.util / self.util_seconds if self.util_seconds else None,
            "fb_used_mib_avg": self.fb / self.fb_seconds if self.fb_seconds else None,
            "power_w_avg": self.power / self.power_seconds if self.power_seconds else None,
            "is_simulated": self.simulated,
        }


def _overlap(
    start: datetime.datetime,
    end: datetime.datetime,
    held_from: datetime.datetime,
    held_to: datetime.datetime | None,
) -> float:
    return max((min(end, held_to or end) - max(start, held_from)).total_seconds(), 0.0)


@transaction.atomic
def _roll_up_bucket(resolution: Resolution, start: datetime.datetime) -> int:
    end = start + datetime.timedelta(seconds=resolution.seconds)
    readings = {
        (row["device__driver"], row["device__pool_name"], row["device__device_name"]): row
        for row in DeviceRollup.objects.filter(resolution=resolution, bucket_start=start).values(
            "device__driver",
            "device__pool_name",
            "device__device_name",
            "device__is_simulated",
            "gpu_util_avg",
            "fb_used_mib_avg",
            "power_w_avg",
        )
    }
    if not readings:
        return 0
    records = (
        AllocationRecord.objects.filter(admin_access=False, started_at__lt=end)
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=start))
        .values(
            "claim_uid",
            "namespace",
            "claim_name",
            "tenant_id",
            "tenant_slug",
            "driver",
            "pool",
            "device_name",
            "started_at",
            "ended_at",
        )
    )
    sums: dict[tuple[str, str], _Sum] = defaultdict(_Sum)
    seen: set[tuple[str, str, str, str]] = set()
    for record in records:
        device = (record["driver"], record["pool"], record["device_name"])
        reading = readings.get(device)
        if reading is None or (record["claim_uid"], *device) in seen:
            continue  # no reading; or the same device under another request or share
        seen.add((record["claim_uid"], *device))
        seconds = _overlap(start, end, record["started_at"], record["ended_at"])
        if not seconds:
            continue
        scopes = [
            (UsageRollup.Scope.CLAIM, record["claim_uid"]),
            (UsageRollup.Scope.NAMESPACE, record["namespace"]),
        ]
        if record["tenant_slug"]:
            scopes.append((UsageRollup.Scope.TENANT, record["tenant_slug"]))
        for scope, key in scopes:
            total = sums[(scope, key)]
            total.add(seconds, reading)
            if not total.labels:
                total.labels = {
                    "namespace": record["namespace"] if scope != UsageRollup.Scope.TENANT else "",
                    "claim_name": record["claim_name"] if scope == UsageRollup.Scope.CLAIM else "",
                    "tenant_id": record["tenant_id"],
                }
    rows = [
        UsageRollup(
            scope=scope,
            key=key,
            resolution=resolution,
            bucket_start=start,
            **total.labels,
            **total.averages(),
        )
        for (scope, key), total in sums.items()
    ]
    UsageRollup.objects.bulk_create(
        rows,
        batch_size=2000,
        update_conflicts=True,
        unique_fields=["scope", "key", "resolution", "bucket_start"],
        update_fields=[
            "namespace",
            "claim_name",
            "tenant",
            "device_seconds",
            "gpu_util_avg",
            "fb_used_mib_avg",
            "power_w_avg",
            "is_simulated",
        ],
    )
    return len(rows)


def roll_up_usage(now: datetime.datetime | None = None) -> int:
    """Rolls up every device bucket not yet rolled up per claim (and the last one again: its
    device rollup may have grown). Idempotent; returns the rows written."""
    del now  # buckets follow the devices' rollups, which follow the clock
    written = 0
    for resolution in (Resolution.FIVE_MINUTES, Resolution.HOUR):
        newest_device = DeviceRollup.objects.filter(resolution=resolution).aggregate(
            newest=Max("bucket_start")
        )["newest"]
        if newest_device is None:
            continue
        last = UsageRollup.objects.filter(resolution=resolution).aggregate(
            last=Max("bucket_start")
        )["last"]
        if last is None:
            oldest = (
                DeviceRollup.objects.filter(resolution=resolution)
                .order_by("bucket_start")
                .values_list("bucket_start", flat=True)
                .first()
            )
            last = oldest or newest_device
        step = datetime.timedelta(seconds=resolution.seconds)
        bucket = last
        for _ in range(_MAX_BUCKETS_PER_RUN):
            if bucket > newest_device:
                break
            written += _roll_up_bucket(resolution, bucket)
            bucket += step
    return written


Points = list[tuple[datetime.datetime, float | None]]


@dataclass
class ClaimUtilisation:
    average: float | None  # GPU utilisation over the claim's life, weighted by device-seconds
    device_hours: float
    is_simulated: bool
    history: Points  # over ``span``: 5-minute buckets up to a day, hourly beyond
    span: TimeRange = DEFAULT_RANGE


def _rollup_resolution(span: TimeRange) -> Resolution:
    """Usage rollups start at 5 minutes: the last hour is read at that resolution too."""
    return Resolution.HOUR if span.resolution == Resolution.HOUR else Resolution.FIVE_MINUTES


def claim_utilisation(
    claim: ResourceClaim, now: datetime.datetime | None = None, span: TimeRange = DEFAULT_RANGE
) -> ClaimUtilisation | None:
    """A claim's utilisation over its life: complete hours from the hourly rollups, the
    time since from the 5-minute ones; its history over ``span``. ``None`` before any reading
    was attributed to it. One query."""
    now = now or timezone.now()
    rows = list(
        UsageRollup.objects.filter(scope=UsageRollup.Scope.CLAIM, key=claim.uid).values_list(
            "resolution", "bucket_start", "device_seconds", "gpu_util_avg", "is_simulated"
        )
    )
    if not rows:
        return None
    hourly = [r for r in rows if r[0] == Resolution.HOUR]
    covered_until = max((r[1] for r in hourly), default=None)
    if covered_until is not None:
        covered_until += datetime.timedelta(hours=1)
    recent = [
        r
        for r in rows
        if r[0] == Resolution.FIVE_MINUTES and (covered_until is None or r[1] >= covered_until)
    ]
    used = hourly + recent
    seconds = sum(r[2] for r in used)
    weighted = [(r[2], r[3]) for r in used if r[3] is not None]
    util_seconds = sum(s for s, _ in weighted)
    since = span.start(now)
    resolution = _rollup_resolution(span)
    history = sorted((r[1], r[3]) for r in rows if r[0] == resolution and r[1] >= since)
    return ClaimUtilisation(
        average=round(sum(s * u for s, u in weighted) / util_seconds, 1) if util_seconds else None,
        device_hours=round(seconds / 3600, 2),
        is_simulated=any(r[4] for r in rows),
        history=history,
        span=span,
    )


@dataclass
class ScopeUtilisation:
    """A namespace's or tenant's GPU utilisation over ``span`` (weighted by device-seconds)
    and the device-hours behind it."""

    history: Points
    device_hours: Points  # device-hours held per bucket
    is_simulated: bool
    span: TimeRange

    @property
    def average(self) -> float | None:
        values = [v for _, v in self.history if v is not None]
        return round(sum(values) / len(values), 1) if values else None


def scopes_utilisation(
    scope: str,
    keys: list[str],
    span: TimeRange = DEFAULT_RANGE,
    now: datetime.datetime | None = None,
) -> dict[str, ScopeUtilisation]:
    """The usage rollups of several tenants (keys: slugs) or namespaces (names) over ``span``,
    by key; a key nothing was attributed to in that time is left out. One query."""
    if not keys:
        return {}
    rows = (
        UsageRollup.objects.filter(
            scope=UsageRollup.Scope(scope),
            key__in=keys,
            resolution=_rollup_resolution(span),
            bucket_start__gte=span.start(now),
        )
        .order_by("key", "bucket_start")
        .values_list("key", "bucket_start", "gpu_util_avg", "device_seconds", "is_simulated")
    )
    found: dict[str, ScopeUtilisation] = {}
    for key, moment, util, seconds, simulated in rows:
        entry = found.get(key)
        if entry is None:
            entry = found[key] = ScopeUtilisation([], [], False, span)
        entry.history.append((moment, util))
        entry.device_hours.append((moment, round(seconds / 3600, 2)))
        entry.is_simulated = entry.is_simulated or simulated
    return found


def scope_utilisation(
    scope: str, key: str, span: TimeRange = DEFAULT_RANGE, now: datetime.datetime | None = None
) -> ScopeUtilisation | None:
    """:func:`scopes_utilisation` of one key; ``None`` when nothing was attributed to it."""
    return scopes_utilisation(scope, [key], span, now).get(key)
