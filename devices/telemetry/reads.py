"""What pages and the API show of telemetry: a device's or a node's latest readings and their
recent history.

Two rules hold everywhere here:

- **A history reaches the latest reading.** A range read from rollups (6 h and longer) takes
  its last two buckets (the open one, and the one before, which the roll-up may not have
  reached yet: it runs every minute) from the raw samples, averaged the same way, so its last
  point holds the reading the page shows as *now*.
- **Stale readings age out.** A reading older than :data:`STALE_AFTER` is still listed, marked
  stale, but no longer counts in what a node reads *now* (its average, whether it is
  simulated): a source that stopped (the demo's simulation switched off) leaves no figure
  that looks current.
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import Avg, Sum
from django.utils import timezone

from devices.models import Device, DeviceRollup, DeviceSample, DeviceTelemetry, Resolution
from toolkit.charts import DEFAULT_RANGE, TimeRange

__all__ = [
    "STALE_AFTER",
    "DeviceUtilisation",
    "History",
    "LatestReading",
    "PartitionLoad",
    "NodeUtilisation",
    "device_utilisation",
    "gpu_history",
    "is_stale",
    "node_utilisation",
    "shows_simulated",
]

# A reading older than this is shown as stale: its source has missed several cycles.
STALE_AFTER = datetime.timedelta(minutes=2)
Points = list[tuple[datetime.datetime, float | None]]
# (moment, utilisation %, memory used MiB, power W), across the devices at that moment
Row = tuple[datetime.datetime, float | None, float | None, float | None]


def is_stale(reading: DeviceTelemetry, now: datetime.datetime) -> bool:
    return now - reading.sampled_at > STALE_AFTER


def shows_simulated(readings: list[DeviceTelemetry], now: datetime.datetime) -> bool:
    """Whether what ``readings`` (a node's) show now is the simulation's: the fresh ones
    decide; only when none is fresh, the stale ones still shown. Readings a simulation left
    behind when it was switched off age out of the answer with their freshness."""
    fresh = [r for r in readings if not is_stale(r, now)]
    return any(r.is_simulated for r in (fresh or readings))


@dataclass
class History:
    """Points over a range, oldest first (``None``: nothing read then)."""

    util: Points = field(default_factory=list)  # GPU utilisation, % (average of the devices)
    memory: Points = field(default_factory=list)  # memory used, % of the devices' memory
    power: Points = field(default_factory=list)  # power draw, W (sum of the devices)


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def gpu_history(
    readings: list[DeviceTelemetry], span: TimeRange, now: datetime.datetime | None = None
) -> History:
    """The history of the devices of these latest readings over ``span``: raw samples for the
    last hour; rollups at the range's resolution beyond, their last two buckets from the raw
    samples (the module's docstring). One query; two for a rolled-up range."""
    telemetry_ids = [r.pk for r in readings]
    if not telemetry_ids:
        return History()
    now = now or timezone.now()
    since = span.start(now)
    rows: list[Row]
    if span.resolution == "raw":
        rows = list(_samples(telemetry_ids, since))
    else:
        resolution = Resolution(span.resolution)
        tail = resolution.bucket_of(now) - datetime.timedelta(seconds=resolution.seconds)
        rows = list(
            DeviceRollup.objects.filter(
                device__in=telemetry_ids,
                resolution=resolution,
                bucket_start__gte=since,
                bucket_start__lt=tail,
            )
            .order_by()
            .values("bucket_start")
            .annotate(
                util=Avg("gpu_util_avg"), used=Avg("fb_used_mib_avg"), power=Sum("power_w_avg")
            )
            .order_by("bucket_start")
            .values_list("bucket_start", "util", "used", "power")
        )
        buckets: dict[datetime.datetime, list[list[float | None]]] = defaultdict(list)
        for moment, *values in _samples(telemetry_ids, max(tail, since)):
            buckets[resolution.bucket_of(moment)].append(values)
        for bucket, samples in sorted(buckets.items()):
            util, used, power = (_mean(list(column)) for column in zip(*samples, strict=True))
            rows.append((bucket, util, used, power))
    totals = [r.fb_total_mib for r in readings if r.fb_total_mib]
    average_total = sum(totals) / len(totals) if totals else None
    return History(
        util=[(moment, util) for moment, util, _, _ in rows],
        memory=[
            (moment, None if used is None or not average_total else 100 * used / average_total)
            for moment, _, used, _ in rows
        ],
        power=[(moment, power) for moment, _, _, power in rows],
    )


def _samples(telemetry_ids: list[int], since: datetime.datetime) -> Iterable[Row]:
    """``(sampled_at, utilisation, memory used, power)`` per moment, averaged over the devices
    (power summed), oldest first."""
    return (
        DeviceSample.objects.filter(device__in=telemetry_ids, sampled_at__gte=since)
        .order_by()
        .values("sampled_at")
        .annotate(util=Avg("gpu_util"), used=Avg("fb_used_mib"), power=Sum("power_w"))
        .order_by("sampled_at")
        .values_list("sampled_at", "util", "used", "power")
    )


@dataclass(frozen=True)
class PartitionLoad:
    """What the partitions (MIG devices) of a GPU in MIG mode read now. NVML has no utilisation
    of the whole GPU in MIG mode, so this is what a page shows for it instead."""

    count: int  # fresh partition readings with a utilisation
    low: int
    high: int

    @classmethod
    def of(cls, partitions: list[DeviceTelemetry]) -> PartitionLoad | None:
        values = [r.gpu_util for r in partitions if r.gpu_util is not None]
        return cls(len(values), min(values), max(values)) if values else None

    def __str__(self) -> str:
        span = f"{self.low} %" if self.low == self.high else f"{self.low}–{self.high} %"
        return f"{self.count} partition{'s' if self.count != 1 else ''}: {span}"


@dataclass(frozen=True)
class LatestReading:
    """A device's latest reading as pages and the API show it."""

    reading: DeviceTelemetry
    is_stale: bool
    partitions: PartitionLoad | None = None  # a GPU in MIG mode: what its partitions read now


@dataclass
class DeviceUtilisation:
    reading: DeviceTelemetry
    is_stale: bool
    span: TimeRange = DEFAULT_RANGE
    history: History = field(default_factory=History)
    # A GPU in MIG mode (no utilisation of its own): what its partitions read now.
    partitions: PartitionLoad | None = None

    @property
    def memory_percent(self) -> float | None:
        fraction = self.reading.fb_used_fraction
        return None if fraction is None else round(fraction * 100, 1)

    @property
    def latest(self) -> LatestReading:
        return LatestReading(self.reading, self.is_stale, self.partitions)


def device_utilisation(
    device: Device, now: datetime.datetime | None = None, span: TimeRange = DEFAULT_RANGE
) -> DeviceUtilisation | None:
    """The device's latest reading and its history over ``span`` (two or three queries; one
    when it has no reading)."""
    reading = DeviceTelemetry.objects.filter(
        driver=device.driver, pool_name=device.pool_name, device_name=device.name
    ).first()
    if reading is None:
        return None
    now = now or timezone.now()
    partitions = None
    if reading.gpu_util is None and reading.uuid and not reading.parent_uuid:
        partitions = PartitionLoad.of(
            list(
                DeviceTelemetry.objects.filter(
                    parent_uuid=reading.uuid, sampled_at__gte=now - STALE_AFTER
                )
            )
        )
    return DeviceUtilisation(
        reading=reading,
        is_stale=is_stale(reading, now),
        span=span,
        history=gpu_history([reading], span, now),
        partitions=partitions,
    )


@dataclass
class NodeUtilisation:
    readings: list[DeviceTelemetry]  # the latest reading of each device on the node
    stale: set[int]  # ids of those readings that are stale: listed, not counted as *now*
    history: History  # over ``span``: the devices' average (power: their sum)
    is_simulated: bool  # :func:`shows_simulated`
    span: TimeRange = DEFAULT_RANGE

    @property
    def rows(self) -> list[LatestReading]:
        fresh_partitions: dict[str, list[DeviceTelemetry]] = defaultdict(list)
        for reading in self.fresh:
            if reading.parent_uuid:
                fresh_partitions[reading.parent_uuid].append(reading)
        return [
            LatestReading(
                reading=reading,
                is_stale=reading.pk in self.stale,
                partitions=PartitionLoad.of(fresh_partitions[reading.uuid])
                if reading.gpu_util is None and reading.uuid and not reading.parent_uuid
                else None,
            )
            for reading in self.readings
        ]

    @property
    def fresh(self) -> list[DeviceTelemetry]:
        return [r for r in self.readings if r.pk not in self.stale]

    @property
    def is_stale(self) -> bool:
        """Nothing on the node was read recently: every figure shown is old."""
        return not self.fresh

    @property
    def average(self) -> float | None:
        values = [r.gpu_util for r in self.fresh if r.gpu_util is not None]
        return round(sum(values) / len(values), 1) if values else None

    @property
    def history_average(self) -> float | None:
        values = [v for _, v in self.history.util if v is not None]
        return round(sum(values) / len(values), 1) if values else None


def node_utilisation(
    node_name: str, now: datetime.datetime | None = None, span: TimeRange = DEFAULT_RANGE
) -> NodeUtilisation | None:
    """The latest readings of a node's devices and the node's history over ``span`` (two or
    three queries; one when nothing on the node was read)."""
    readings = list(DeviceTelemetry.objects.on_node(node_name).order_by("device_name"))
    if not readings:
        return None
    now = now or timezone.now()
    return NodeUtilisation(
        readings=readings,
        stale={r.pk for r in readings if is_stale(r, now)},
        history=gpu_history(readings, span, now),
        is_simulated=shows_simulated(readings, now),
        span=span,
    )
