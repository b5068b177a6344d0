"""One ingest cycle of a source, its rollups and its retention: the services the telemetry
tasks and ``manage.py telemetry_ingest`` call."""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Avg, Count, F, Max, Q, QuerySet, Sum
from django.utils import timezone

from devices.models import (
    DeviceRollup,
    DeviceSample,
    DeviceTelemetry,
    Resolution,
    TelemetrySource,
)
from devices.telemetry.sources import SourceError, collect, simulated_readings
from devices.telemetry.store import (
    cached_device_index,
    device_index,
    held_devices,
    record_readings,
)
from dra.memory import without_cyclic_gc
from portal.metrics import TELEMETRY_CYCLE_SECONDS

__all__ = [
    "CycleResult",
    "backfill_simulated_history",
    "due_sources",
    "ingest_source",
    "prune",
    "roll_up",
]

logger = logging.getLogger(__name__)
_MAX_BUCKETS_PER_RUN = 24 * 12  # a day of 5-minute buckets: catching up stays bounded


@dataclass
class CycleResult:
    source: str
    ran: bool
    samples: int = 0
    unmatched: int = 0
    error: str = ""
    failed: bool = False  # the whole source failed (``error`` says why); else errors are partial


def due_sources(now: datetime.datetime | None = None) -> list[TelemetrySource]:
    """Enabled sources whose interval has passed since their last attempt."""
    now = now or timezone.now()
    return [
        source
        for source in TelemetrySource.objects.filter(enabled=True)
        if source.last_attempt_at is None
        or now - source.last_attempt_at >= datetime.timedelta(seconds=source.interval_seconds * 0.9)
    ]


def _claim_cycle(source: TelemetrySource, now: datetime.datetime) -> bool:
    """Takes this cycle of ``source`` (a conditional UPDATE): two workers never run it twice."""
    earliest = now - datetime.timedelta(seconds=source.interval_seconds * 0.9)
    taken = (
        TelemetrySource.objects.filter(pk=source.pk, enabled=True)
        .filter(Q(last_attempt_at__isnull=True) | Q(last_attempt_at__lte=earliest))
        .update(last_attempt_at=now)
    )
    return taken == 1


def ingest_source(
    source: TelemetrySource, now: datetime.datetime | None = None, *, force: bool = False
) -> CycleResult:
    """Collects, joins and stores one cycle of ``source``, and records how it went on the
    source (for the Telemetry page). ``force`` runs it even if its interval has not passed."""
    with without_cyclic_gc():
        return _ingest_source(source, now, force=force)


def _ingest_source(
    source: TelemetrySource, now: datetime.datetime | None, *, force: bool
) -> CycleResult:
    now = now or timezone.now()
    if force:
        TelemetrySource.objects.filter(pk=source.pk).update(last_attempt_at=now)
    elif not _claim_cycle(source, now):
        return CycleResult(source.name, ran=False)
    started = time.monotonic()
    health: dict[str, object] = {}
    try:
        collected = collect(source, now)
    except SourceError as failure:
        message = str(failure)[:2000]
        logger.warning("telemetry source %s: %s", source.name, message)
        TelemetrySource.objects.filter(pk=source.pk).update(
            last_error=message, last_duration_ms=round((time.monotonic() - started) * 1000)
        )
        TELEMETRY_CYCLE_SECONDS.labels(source.name).observe(time.monotonic() - started)
        return CycleResult(source.name, ran=True, error=message, failed=True)
    if collected.matched is not None:
        matched, unmatched = collected.matched, 0
    else:
        # Every device, not only the readings' Hostnames: dcgm-exporter's Hostname is its pod's
        # name unless configured otherwise, and a UUID needs no node to be found.
        index = cached_device_index()
        # Only a MIG reading without its exporter's name can need who holds what now.
        ambiguous = {
            r.uuid
            for r in collected.readings
            if r.is_mig and index.partitions and index.ambiguous(r)
        }
        held = held_devices(ambiguous) if ambiguous else None
        matched, unmatched = [], 0
        for reading in collected.readings:
            device = index.find(reading, collected.mig_names, held)
            if device is None:
                unmatched += 1
            else:
                matched.append((device, reading))
    written = record_readings(source, matched, now)
    error = "; ".join(collected.errors[:5])
    if len(collected.errors) > 5:
        error += f"; and {len(collected.errors) - 5} more"
    health.update(
        last_success_at=now,
        last_error=error[:2000],
        last_duration_ms=round((time.monotonic() - started) * 1000),
        last_sample_count=written,
        last_unmatched_count=unmatched,
    )
    TelemetrySource.objects.filter(pk=source.pk).update(**health)
    TELEMETRY_CYCLE_SECONDS.labels(source.name).observe(time.monotonic() - started)
    return CycleResult(source.name, ran=True, samples=written, unmatched=unmatched, error=error)


def roll_up(now: datetime.datetime | None = None) -> int:
    """Writes the 5-minute rollups of every closed bucket since the last one written (that one
    again: late samples), then the hourly ones from them. Idempotent; returns rows written."""
    now = now or timezone.now()
    written = 0
    for resolution in (Resolution.FIVE_MINUTES, Resolution.HOUR):
        seconds = resolution.seconds
        last = (
            DeviceRollup.objects.filter(resolution=resolution)
            .order_by("-bucket_start")
            .values_list("bucket_start", flat=True)
            .first()
        )
        if last is None:
            source_rows = (
                DeviceSample.objects
                if resolution is Resolution.FIVE_MINUTES
                else (DeviceRollup.objects.filter(resolution=Resolution.FIVE_MINUTES))
            )
            field = "sampled_at" if resolution is Resolution.FIVE_MINUTES else "bucket_start"
            first = source_rows.order_by(field).values_list(field, flat=True).first()
            if first is None:
                continue
            last = resolution.bucket_of(first)
        bucket = last
        end = resolution.bucket_of(now)  # buckets before this one are closed
        for _ in range(_MAX_BUCKETS_PER_RUN):
            if bucket >= end:
                break
            written += _roll_up_bucket(resolution, bucket)
            bucket += datetime.timedelta(seconds=seconds)
    return written


_ROLLUP_SQL = {
    # One statement per bucket on PostgreSQL: aggregate and upsert without a Python row.
    Resolution.FIVE_MINUTES: """
        INSERT INTO devices_devicerollup (device_id, resolution, bucket_start, samples,
            gpu_util_avg, gpu_util_max, mem_copy_util_avg, fb_used_mib_avg, fb_used_mib_max,
            power_w_avg, temperature_c_max)
        SELECT device_id, %(resolution)s, %(start)s, count(*), avg(gpu_util), max(gpu_util),
            avg(mem_copy_util), avg(fb_used_mib), max(fb_used_mib), avg(power_w),
            max(temperature_c)
        FROM devices_devicesample WHERE sampled_at >= %(start)s AND sampled_at < %(end)s
        GROUP BY device_id
        ON CONFLICT (device_id, resolution, bucket_start) DO UPDATE SET
            samples = EXCLUDED.samples, gpu_util_avg = EXCLUDED.gpu_util_avg,
            gpu_util_max = EXCLUDED.gpu_util_max, mem_copy_util_avg = EXCLUDED.mem_copy_util_avg,
            fb_used_mib_avg = EXCLUDED.fb_used_mib_avg, fb_used_mib_max = EXCLUDED.fb_used_mib_max,
            power_w_avg = EXCLUDED.power_w_avg, temperature_c_max = EXCLUDED.temperature_c_max
    """,
    Resolution.HOUR: """
        INSERT INTO devices_devicerollup (device_id, resolution, bucket_start, samples,
            gpu_util_avg, gpu_util_max, mem_copy_util_avg, fb_used_mib_avg, fb_used_mib_max,
            power_w_avg, temperature_c_max)
        SELECT device_id, %(resolution)s, %(start)s, sum(samples),
            sum(gpu_util_avg * samples) / nullif(sum(samples), 0), max(gpu_util_max),
            sum(mem_copy_util_avg * samples) / nullif(sum(samples), 0),
            sum(fb_used_mib_avg * samples) / nullif(sum(samples), 0), max(fb_used_mib_max),
            sum(power_w_avg * samples) / nullif(sum(samples), 0), max(temperature_c_max)
        FROM devices_devicerollup
        WHERE resolution = '5m' AND bucket_start >= %(start)s AND bucket_start < %(end)s
        GROUP BY device_id
        ON CONFLICT (device_id, resolution, bucket_start) DO UPDATE SET
            samples = EXCLUDED.samples, gpu_util_avg = EXCLUDED.gpu_util_avg,
            gpu_util_max = EXCLUDED.gpu_util_max, mem_copy_util_avg = EXCLUDED.mem_copy_util_avg,
            fb_used_mib_avg = EXCLUDED.fb_used_mib_avg, fb_used_mib_max = EXCLUDED.fb_used_mib_max,
            power_w_avg = EXCLUDED.power_w_avg, temperature_c_max = EXCLUDED.temperature_c_max
    """,
}


@transaction.atomic
def _roll_up_bucket(resolution: Resolution, start: datetime.datetime) -> int:
    end = start + datetime.timedelta(seconds=resolution.seconds)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                _ROLLUP_SQL[resolution],
                {"resolution": resolution.value, "start": start, "end": end},
            )
            return cursor.rowcount
    rows: QuerySet[Any, Mapping[str, Any]]
    if resolution is Resolution.FIVE_MINUTES:
        rows = (
            DeviceSample.objects.filter(sampled_at__gte=start, sampled_at__lt=end)
            .order_by()
            .values("device_id")
            .annotate(
                n=Count("pk"),
                gpu_util_avg_=Avg("gpu_util"),
                gpu_util_max_=Max("gpu_util"),
                mem_copy_util_avg_=Avg("mem_copy_util"),
                fb_used_mib_avg_=Avg("fb_used_mib"),
                fb_used_mib_max_=Max("fb_used_mib"),
                power_w_avg_=Avg("power_w"),
                temperature_c_max_=Max("temperature_c"),
            )
        )
    else:
        # Averages of averages, weighted by the samples behind each.
        rows = (
            DeviceRollup.objects.filter(
                resolution=Resolution.FIVE_MINUTES, bucket_start__gte=start, bucket_start__lt=end
            )
            .order_by()
            .values("device_id")
            .annotate(
                n=Sum("samples"),
                gpu_util_avg_=Sum(F("gpu_util_avg") * F("samples")) / Sum("samples"),
                gpu_util_max_=Max("gpu_util_max"),
                mem_copy_util_avg_=Sum(F("mem_copy_util_avg") * F("samples")) / Sum("samples"),
                fb_used_mib_avg_=Sum(F("fb_used_mib_avg") * F("samples")) / Sum("samples"),
                fb_used_mib_max_=Max("fb_used_mib_max"),
                power_w_avg_=Sum(F("power_w_avg") * F("samples")) / Sum("samples"),
                temperature_c_max_=Max("temperature_c_max"),
            )
        )
    rollups = [
        DeviceRollup(
            device_id=row["device_id"],
            resolution=resolution,
            bucket_start=start,
            samples=row["n"],
            gpu_util_avg=row["gpu_util_avg_"],
            gpu_util_max=row["gpu_util_max_"],
            mem_copy_util_avg=row["mem_copy_util_avg_"],
            fb_used_mib_avg=row["fb_used_mib_avg_"],
            fb_used_mib_max=row["fb_used_mib_max_"],
            power_w_avg=row["power_w_avg_"],
            temperature_c_max=row["temperature_c_max_"],
        )
        for row in rows
    ]
    DeviceRollup.objects.bulk_create(
        rollups,
        batch_size=2000,
        update_conflicts=True,
        unique_fields=["device", "resolution", "bucket_start"],
        update_fields=[
            "samples",
            "gpu_util_avg",
            "gpu_util_max",
            "mem_copy_util_avg",
            "fb_used_mib_avg",
            "fb_used_mib_max",
            "power_w_avg",
            "temperature_c_max",
        ],
    )
    return len(rollups)


def prune(now: datetime.datetime | None = None) -> dict[str, int]:
    """Deletes raw samples and rollups past their retention (``TELEMETRY_*_RETENTION``)."""
    now = now or timezone.now()
    samples, _ = DeviceSample.objects.filter(
        sampled_at__lt=now - settings.TELEMETRY_RAW_RETENTION
    ).delete()
    five, _ = DeviceRollup.objects.filter(
        resolution=Resolution.FIVE_MINUTES,
        bucket_start__lt=now - settings.TELEMETRY_5M_RETENTION,
    ).delete()
    hourly, _ = DeviceRollup.objects.filter(
        resolution=Resolution.HOUR, bucket_start__lt=now - settings.TELEMETRY_1H_RETENTION
    ).delete()
    return {"samples": samples, "5m": five, "1h": hourly}


def backfill_simulated_history(
    source: TelemetrySource, *, hours: int = 24, now: datetime.datetime | None = None
) -> int:
    """Gives the demo a past: 5-minute and hourly rollups of ``source``'s simulated readings
    for the last ``hours`` (buckets that exist are kept). Only for a simulated source."""
    if not source.is_simulated:
        raise ValueError("only a simulated source has a made-up past")
    now = now or timezone.now()
    index = {d.key: d for d in device_index().by_name.values()}
    rows = {
        row.natural_key: row
        for row in DeviceTelemetry.objects.filter(source=source)
        if row.natural_key in index
    }
    devices = [index[key] for key in rows]
    memory = {key: row.fb_total_mib for key, row in rows.items() if row.fb_total_mib}
    rollups = []
    for resolution in (Resolution.FIVE_MINUTES, Resolution.HOUR):
        step = datetime.timedelta(seconds=resolution.seconds)
        bucket = resolution.bucket_of(now - datetime.timedelta(hours=hours))
        while bucket + step <= now:
            for device, reading in simulated_readings(devices, bucket + step / 2, memory):
                values = reading.values
                util = values.get("gpu_util")
                rollups.append(
                    DeviceRollup(
                        device_id=rows[device.key].pk,
                        resolution=resolution,
                        bucket_start=bucket,
                        samples=resolution.seconds // source.interval_seconds,
                        gpu_util_avg=util,
                        gpu_util_max=None if util is None else min(round(util * 1.15), 100),
                        mem_copy_util_avg=values.get("mem_copy_util"),
                        fb_used_mib_avg=values["fb_used_mib"],
                        fb_used_mib_max=values["fb_used_mib"],
                        power_w_avg=values.get("power_w"),
                        temperature_c_max=values.get("temperature_c"),
                    )
                )
            bucket += step
    DeviceRollup.objects.bulk_create(rollups, batch_size=2000, ignore_conflicts=True)
    return len(rollups)
