"""What pages show of telemetry: a device's or a node's latest readings and recent history."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from django.db.models import Avg
from django.utils import timezone

from devices.models import Device, DeviceRollup, DeviceSample, DeviceTelemetry, Resolution
from portal.charts import DEFAULT_RANGE, TimeRange

__all__ = [
    "STALE_AFTER",
    "gpu_history",
    "DeviceUtilisation",
    "NodeUtilisation",
    "device_utilisation",
    "node_utilisation",
]

# A reading older than this is shown as stale: its source has missed several cycles.
STALE_AFTER = datetime.timedelta(minutes=2)
_HISTORY = datetime.timedelta(hours=24)
Points = list[tuple[datetime.datetime, float | None]]


def gpu_history(
    readings: list[DeviceTelemetry], span: TimeRange, now: datetime.datetime | None = None
) -> tuple[Points, Points]:
    """GPU utilisation and memory used (percent of the devices' memory) of the devices of
    these latest readings over ``span``, averaged over the devices per point: raw samples for
    the last hour, rollups at the range's resolution beyond. One query."""
    telemetry_ids = [r.pk for r in readings]
    fb_total_mib = [r.fb_total_mib for r in readings]
    if not telemetry_ids:
        return [], []
    since = span.start(now)
    if span.resolution == "raw":
        rows = (
            DeviceSample.objects.filter(device__in=telemetry_ids, sampled_at__gte=since)
            .order_by()
            .values("sampled_at")
            .annotate(util=Avg("gpu_util"), used=Avg("fb_used_mib"))
            .order_by("sampled_at")
            .values_list("sampled_at", "util", "used")
        )
    else:
        rows = (
            DeviceRollup.objects.filter(
                device__in=telemetry_ids,
                resolution=Resolution(span.resolution),
                bucket_start__gte=since,
            )
            .order_by()
            .values("bucket_start")
            .annotate(util=Avg("gpu_util_avg"), used=Avg("fb_used_mib_avg"))
            .order_by("bucket_start")
            .values_list("bucket_start", "util", "used")
        )
    rows = list(rows)
    totals = [t for t in fb_total_mib if t]
    average_total = sum(totals) / len(totals) if totals else None
    util = [(moment, u) for moment, u, _ in rows]
    memory = [
        (moment, None if used is None or not average_total else 100 * used / average_total)
        for moment, _, used in rows
    ]
    return util, memory


@dataclass
class DeviceUtilisation:
    reading: DeviceTelemetry
    is_stale: bool
    span: TimeRange = DEFAULT_RANGE
    # GPU utilisation and memory used (%) over ``span``, oldest first (None: no data).
    history: Points = field(default_factory=list)
    memory_history: Points = field(default_factory=list)

    @property
    def memory_percent(self) -> float | None:
        fraction = self.reading.fb_used_fraction
        return None if fraction is None else round(fraction * 100, 1)


def device_utilisation(
    device: Device, now: datetime.datetime | None = None, span: TimeRange = DEFAULT_RANGE
) -> DeviceUtilisation | None:
    """The device's latest reading and its history over ``span`` (two queries; one when it
    has no reading)."""
    reading = DeviceTelemetry.objects.filter(
        driver=device.driver, pool_name=device.pool_name, device_name=device.name
    ).first()
    if reading is None:
        return None
    now = now or timezone.now()
    util, memory = gpu_history([reading], span, now)
    return DeviceUtilisation(
        reading=reading,
        is_stale=now - reading.sampled_at > STALE_AFTER,
        span=span,
        history=util,
        memory_history=memory,
    )


@dataclass
class NodeUtilisation:
    readings: list[DeviceTelemetry]  # the latest reading of each device on the node
    history: Points  # over ``span``, the average over its devices
    memory_history: Points
    is_stale: bool  # its newest reading is old
    is_simulated: bool
    span: TimeRange = DEFAULT_RANGE

    @property
    def average(self) -> float | None:
        values = [r.gpu_util for r in self.readings if r.gpu_util is not None]
        return round(sum(values) / len(values), 1) if values else None

    @property
    def history_average(self) -> float | None:
        values = [v for _, v in self.history if v is not None]
        return round(sum(values) / len(values), 1) if values else None


def node_utilisation(
    node_name: str, now: datetime.datetime | None = None, span: TimeRange = DEFAULT_RANGE
) -> NodeUtilisation | None:
    """The latest readings of a node's devices and the node's history over ``span`` (two
    queries; one when nothing on the node was read)."""
    readings = list(DeviceTelemetry.objects.on_node(node_name).order_by("device_name"))
    if not readings:
        return None
    now = now or timezone.now()
    util, memory = gpu_history(readings, span, now)
    return NodeUtilisation(
        readings=readings,
        history=util,
        memory_history=memory,
        is_stale=now - max(r.sampled_at for r in readings) > STALE_AFTER,
        is_simulated=any(r.is_simulated for r in readings),
        span=span,
    )
