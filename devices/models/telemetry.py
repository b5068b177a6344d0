"""Telemetry: where GPU readings come from, the latest reading per device, raw samples for a
short window, and 5-minute / hourly rollups per device.

A reading is keyed by the DRA device it was joined to (driver, pool, device name: the natural
key pages and allocation records use), not by the ``Device`` row, whose id changes whenever its
ResourceSlice is re-created. ``uuid`` / ``parent_uuid`` / ``gpu_instance_id`` keep the hardware
identity the sample was joined by (a whole GPU by UUID or PCI bus id; a MIG device by its
parent's UUID and GPU instance id).

Samples and rollups refer to the latest-value row (``DeviceTelemetry``) by integer id so that
the high-volume tables stay narrow; readings are stored in dcgm-exporter's units (percent,
MiB, W, °C). Per-claim, per-namespace and per-tenant rollups live with the claims app, which
knows who held what when (``claims.AllocationRecord``).
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.models import Q
from django.utils import timezone

__all__ = [
    "DeviceRollup",
    "DeviceRollupQuerySet",
    "DeviceSample",
    "DeviceTelemetry",
    "DeviceTelemetryQuerySet",
    "RealField",
    "Resolution",
    "TelemetrySource",
    "TimeIndex",
]


_TARGET = re.compile(r"(https?://)?[A-Za-z0-9.\-\[\]:]+:\d{1,5}")


class Resolution(models.TextChoices):
    FIVE_MINUTES = "5m", "5 minutes"
    HOUR = "1h", "1 hour"

    @property
    def seconds(self) -> int:
        return 300 if self is Resolution.FIVE_MINUTES else 3600

    def bucket_of(self, moment: datetime.datetime) -> datetime.datetime:
        """The start of the bucket ``moment`` falls in (UTC)."""
        epoch = int(moment.timestamp())
        return datetime.datetime.fromtimestamp(epoch - epoch % self.seconds, tz=datetime.UTC)


class TelemetrySource(models.Model):
    """One way readings reach the portal: scrape our exporters (small clusters), query a
    Prometheus that dcgm-exporter or our exporter already feed (large clusters), or simulate
    readings (the demo; every page shows such readings as *simulated*)."""

    class Kind(models.TextChoices):
        EXPORTERS = "exporters", "Scrape exporters"
        PROMETHEUS = "prometheus", "Query Prometheus"
        SIMULATED = "simulated", "Simulated"

    name = models.SlugField(max_length=63, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    enabled = models.BooleanField(default=True)
    # Prometheus: the server's base URL (``http://prometheus.monitoring:9090``).
    url = models.URLField(max_length=500, blank=True)
    # Exporters: explicit ``host:port`` targets; empty means discover them from the mirrored
    # exporter pods (or the GPU nodes' addresses) on ``exporter_port``.
    exporter_targets = models.JSONField(default=list, blank=True)
    exporter_port = models.PositiveIntegerField(default=9400)
    interval_seconds = models.PositiveIntegerField(default=15)
    timeout_seconds = models.PositiveIntegerField(default=10)
    # What the last cycle did, for the health shown on the dashboard and the Telemetry page.
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    last_duration_ms = models.PositiveIntegerField(null=True, blank=True)
    last_sample_count = models.PositiveIntegerField(default=0)
    # Samples that named no mirrored device (a GPU the DRA driver does not publish, a typo'd
    # target): counted, never stored.
    last_unmatched_count = models.PositiveIntegerField(default=0)

    # Set by the Telemetry page on the sources it lists (enabled and ``is_stale``).
    stale: bool

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """A Prometheus needs its URL; exporter targets are ``host:port`` strings."""
        if self.kind == self.Kind.PROMETHEUS and not self.url:
            raise ValidationError({"url": "A Prometheus source needs the server's base URL."})
        targets = self.exporter_targets
        if not isinstance(targets, list) or not all(
            isinstance(t, str) and _TARGET.fullmatch(t) for t in targets
        ):
            raise ValidationError(
                {"exporter_targets": 'A list of "host:port" strings, e.g. ["10.0.0.11:9400"].'}
            )

    @property
    def is_simulated(self) -> bool:
        return self.kind == self.Kind.SIMULATED

    def is_stale(self, now: datetime.datetime | None = None) -> bool:
        """No successful cycle within three intervals (or ever): its readings are not current."""
        if self.last_success_at is None:
            return True
        now = now or timezone.now()
        limit = datetime.timedelta(seconds=3 * max(self.interval_seconds, 1))
        return now - self.last_success_at > limit


class DeviceTelemetryQuerySet(models.QuerySet["DeviceTelemetry"]):
    def for_device_keys(self, keys: list[tuple[str, str, str]]) -> DeviceTelemetryQuerySet:
        """Rows for ``[(driver, pool, device name)]``, in one query."""
        if not keys:
            return self.none()
        match = Q()
        for driver, pool, name in keys:
            match |= Q(driver=driver, pool_name=pool, device_name=name)
        return self.filter(match)

    def on_node(self, node_name: str) -> DeviceTelemetryQuerySet:
        return self.filter(node_name=node_name)

    def fresh(
        self, now: datetime.datetime | None = None, *, seconds: int = 60
    ) -> DeviceTelemetryQuerySet:
        """Rows whose last reading is at most ``seconds`` old."""
        now = now or timezone.now()
        return self.filter(sampled_at__gte=now - datetime.timedelta(seconds=seconds))


class DeviceTelemetry(models.Model):
    """The latest reading of one DRA device (a whole GPU or a MIG device)."""

    driver = models.CharField(max_length=63)
    pool_name = models.CharField(max_length=253)
    device_name = models.CharField(max_length=63)
    node_name = models.CharField(max_length=253, blank=True)
    uuid = models.CharField(max_length=100, blank=True)
    parent_uuid = models.CharField(max_length=100, blank=True)
    gpu_instance_id = models.PositiveIntegerField(null=True, blank=True)
    pci_bus_id = models.CharField(max_length=32, blank=True)
    source = models.ForeignKey(
        TelemetrySource, on_delete=models.SET_NULL, null=True, blank=True, related_name="devices"
    )
    is_simulated = models.BooleanField(default=False)
    sampled_at = models.DateTimeField()
    gpu_util = models.SmallIntegerField(null=True, blank=True)  # %
    mem_copy_util = models.SmallIntegerField(null=True, blank=True)  # %
    fb_used_mib = models.IntegerField(null=True, blank=True)
    fb_total_mib = models.IntegerField(null=True, blank=True)
    power_w = models.FloatField(null=True, blank=True)
    temperature_c = models.SmallIntegerField(null=True, blank=True)

    objects = DeviceTelemetryQuerySet.as_manager()

    class Meta:
        ordering = ["node_name", "driver", "pool_name", "device_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["driver", "pool_name", "device_name"], name="one_telemetry_row_per_device"
            )
        ]
        # Plain B-trees (``db_index=True`` would add a LIKE index beside each). Every cycle
        # rewrites every row; on PostgreSQL the table leaves half of each page free
        # (migration 0011) so those updates stay on their page and touch no index.
        indexes = [
            models.Index(fields=["node_name"], name="devicetelemetry_node"),
            models.Index(fields=["uuid"], name="devicetelemetry_uuid"),
        ]

    def __str__(self) -> str:
        return f"{self.pool_name}/{self.device_name}"

    @property
    def natural_key(self) -> tuple[str, str, str]:
        return (self.driver, self.pool_name, self.device_name)

    @property
    def fb_used_fraction(self) -> float | None:
        if self.fb_used_mib is None or not self.fb_total_mib:
            return None
        return self.fb_used_mib / self.fb_total_mib


class RealField(models.FloatField):
    """A 4-byte float on PostgreSQL (``real``: ~7 significant digits, plenty for a percentage, a
    wattage or an average of MiB); a float elsewhere. Halves the width of the high-volume rows."""

    def db_type(self, connection: BaseDatabaseWrapper) -> str | None:
        if connection.vendor == "postgresql":
            return "real"
        return super().db_type(connection)


class TimeIndex(models.Index):
    """An index on a timestamp rows arrive in order of: BRIN on PostgreSQL (a few kilobytes for
    millions of rows, enough for time-range scans, rollups and pruning), B-tree elsewhere."""

    def create_sql(
        self,
        model: type[models.Model],
        schema_editor: BaseDatabaseSchemaEditor,
        using: str = "",
        **kwargs: Any,
    ) -> Any:
        if schema_editor.connection.vendor != "postgresql":
            return super().create_sql(model, schema_editor, using=using, **kwargs)
        statement = super().create_sql(model, schema_editor, using=" USING brin", **kwargs)
        # 16 pages a range (not 128): finding one cycle's samples rechecks a few thousand rows
        # of neighbouring cycles instead of ~500,000 at 40,000 GPUs.
        # The stubs type every part as a Table; "extra" is text.
        parts: dict[str, Any] = statement.parts
        parts["extra"] = " WITH (pages_per_range = 16)" + parts["extra"]
        return statement


class DeviceSample(models.Model):
    """One raw reading; kept for ``TELEMETRY_RAW_RETENTION`` and written with COPY on
    PostgreSQL. No foreign-key constraint: pruning and ingest never wait on each other.

    Narrow on purpose (~90 bytes a row with its indexes on PostgreSQL): the key is
    ``(device, sampled_at)`` with no surrogate id, columns are ordered widest first so no byte
    is lost to alignment, and time is indexed with BRIN."""

    pk = models.CompositePrimaryKey("device_id", "sampled_at")
    device = models.ForeignKey(
        DeviceTelemetry,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,  # the primary key's first column
        related_name="+",
    )
    sampled_at = models.DateTimeField()
    power_w = RealField(null=True, blank=True)
    fb_used_mib = models.IntegerField(null=True, blank=True)
    gpu_util = models.SmallIntegerField(null=True, blank=True)
    mem_copy_util = models.SmallIntegerField(null=True, blank=True)
    temperature_c = models.SmallIntegerField(null=True, blank=True)

    class Meta:
        indexes = [TimeIndex(fields=["sampled_at"], name="devicesample_time")]

    def __str__(self) -> str:
        return f"device {self.device_id} at {self.sampled_at:%Y-%m-%d %H:%M:%S}"


class DeviceRollupQuerySet(models.QuerySet["DeviceRollup"]):
    def series(
        self,
        devices: models.QuerySet[DeviceTelemetry] | list[int],
        *,
        since: datetime.datetime,
        resolution: Resolution | str,
    ) -> DeviceRollupQuerySet:
        """Buckets of ``devices`` from ``since`` on, oldest first."""
        return self.filter(
            device__in=devices, resolution=Resolution(resolution), bucket_start__gte=since
        ).order_by("bucket_start", "device_id")


class DeviceRollup(models.Model):
    """Aggregates of one device's samples over a 5-minute or hourly bucket (retained longer
    than raw samples: ``TELEMETRY_5M_RETENTION``, ``TELEMETRY_1H_RETENTION``).

    ~125 bytes a row with its indexes on PostgreSQL (docs/benchmarks.md): keyed by
    ``(device, resolution, bucket_start)`` with no surrogate id, 4-byte floats, widest columns
    first, time indexed with BRIN."""

    pk = models.CompositePrimaryKey("device_id", "resolution", "bucket_start")
    device = models.ForeignKey(
        DeviceTelemetry,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,  # the primary key's first column
        related_name="+",
    )
    bucket_start = models.DateTimeField()
    gpu_util_avg = RealField(null=True, blank=True)
    mem_copy_util_avg = RealField(null=True, blank=True)
    fb_used_mib_avg = RealField(null=True, blank=True)
    fb_used_mib_max = models.IntegerField(null=True, blank=True)
    power_w_avg = RealField(null=True, blank=True)
    samples = models.PositiveSmallIntegerField()
    gpu_util_max = models.SmallIntegerField(null=True, blank=True)
    temperature_c_max = models.SmallIntegerField(null=True, blank=True)
    resolution = models.CharField(max_length=2, choices=Resolution.choices)

    objects = DeviceRollupQuerySet.as_manager()

    class Meta:
        indexes = [TimeIndex(fields=["bucket_start"], name="devicerollup_time")]

    def __str__(self) -> str:
        return f"device {self.device_id} {self.resolution} from {self.bucket_start:%Y-%m-%d %H:%M}"
