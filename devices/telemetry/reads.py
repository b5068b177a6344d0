"""What pages show of telemetry: a device's latest reading and its recent history."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from django.utils import timezone

from devices.models import Device, DeviceRollup, DeviceTelemetry, Resolution

__all__ = ["STALE_AFTER", "DeviceUtilisation", "device_utilisation"]

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
