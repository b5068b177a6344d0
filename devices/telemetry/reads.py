"""What pages show of telemetry: a device's or a node's latest readings and recent history."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from django.db.models import Avg
from django.utils import timezone

from devices.models import Device, DeviceRollup, DeviceTelemetry, Resolution

__all__ = [
    "STALE_AFTER",
    "DeviceUtilisation",
    "NodeUtilisation",
    "device_utilisation",
    "node_utilisation",
]

# A reading older than this is shown as stale: its source has missed several cycles.
STALE_AFTER = datetime.timedelta(minutes=2)
_HISTORY = datetime.timedelta(hours=24)


@dataclass
class DeviceUtilisation:
    reading: DeviceTelemetry
    is_stale: bool
    # GPU utilisation per 5-minute bucket over the last 24 hours, oldest first (None: no data).
    history: list[tuple[datetime.datetime, float | None]] = field(default_factory=list)

    @property
    def memory_percent(self) -> float | None:
        fraction = self.reading.fb_used_fraction
        return None if fraction is None else round(fraction * 100, 1)

    @property
    def history_average(self) -> float | None:
        values = [v for _, v in self.history if v is not None]
        return round(sum(values) / len(values), 1) if values else None


def device_utilisation(
    device: Device, now: datetime.datetime | None = None
) -> DeviceUtilisation | None:
    """The device's latest reading and last 24 h (two queries; one when it has no reading)."""
    reading = DeviceTelemetry.objects.filter(
        driver=device.driver, pool_name=device.pool_name, device_name=device.name
    ).first()
    if reading is None:
        return None
    now = now or timezone.now()
    rollups = DeviceRollup.objects.series(
        [reading.pk], since=now - _HISTORY, resolution=Resolution.FIVE_MINUTES
    ).values_list("bucket_start", "gpu_util_avg")
    return DeviceUtilisation(
        reading=reading,
        is_stale=now - reading.sampled_at > STALE_AFTER,
        history=list(rollups),
    )


@dataclass
class NodeUtilisation:
    readings: list[DeviceTelemetry]  # the latest reading of each device on the node
    history: list[tuple[datetime.datetime, float | None]]  # 24 h, average over its devices
    is_stale: bool  # its newest reading is old
    is_simulated: bool

    @property
    def average(self) -> float | None:
        values = [r.gpu_util for r in self.readings if r.gpu_util is not None]
        return round(sum(values) / len(values), 1) if values else None


def node_utilisation(
    node_name: str, now: datetime.datetime | None = None
) -> NodeUtilisation | None:
    """The latest readings of a node's devices and the node's last 24 h (two queries; one when
    nothing on the node was read)."""
    readings = list(DeviceTelemetry.objects.on_node(node_name).order_by("device_name"))
    if not readings:
        return None
    now = now or timezone.now()
    history = list(
        DeviceRollup.objects.filter(
            device__in=[r.pk for r in readings],
            resolution=Resolution.FIVE_MINUTES,
            bucket_start__gte=now - _HISTORY,
        )
        .order_by()
        .values("bucket_start")
        .annotate(average=Avg("gpu_util_avg"))
        .order_by("bucket_start")
        .values_list("bucket_start", "average")
    )
    return NodeUtilisation(
        readings=readings,
        history=history,
        is_stale=now - max(r.sampled_at for r in readings) > STALE_AFTER,
        is_simulated=any(r.is_simulated for r in readings),
    )
