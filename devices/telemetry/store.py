"""Writes joined readings: the latest value per device (an upsert) and the raw samples
(``COPY`` on PostgreSQL, ``bulk_create`` elsewhere)."""

from __future__ import annotations

import datetime

from django.db import connection, transaction

from devices.models import Device, DeviceSample, DeviceTelemetry, TelemetrySource
from devices.telemetry.join import DeviceIndex, IndexedDevice
from devices.telemetry.readings import Reading

__all__ = ["device_index", "record_readings"]

_BATCH = 2000
_SAMPLE_COLUMNS = (
    "device_id",
    "sampled_at",
    "gpu_util",
    "mem_copy_util",
    "fb_used_mib",
    "power_w",
    "temperature_c",
)


def device_index() -> DeviceIndex:
    """The mirrored devices of nodes, which readings can join to. Two queries: whole devices
    without their attributes, partitions with them (their ``profile``)."""
    devices = Device.objects.exclude(node_name="").order_by()
    columns = ("driver", "pool_name", "name", "node_name", "uuid", "parent_uuid", "pci_bus_id")
    whole = devices.filter(parent_uuid="").values(*columns, "state")
    partitions = devices.exclude(parent_uuid="").values(*columns, "state", "attributes")
    return DeviceIndex.from_rows(
        [
            *whole,
            *({**row, "profile": _attribute(row["attributes"], "profile")} for row in partitions),
        ]
    )


def _attribute(attributes: object, name: str) -> str:
    if not isinstance(attributes, dict):
        return ""
    for key, value in attributes.items():
        if (key == name or key.endswith(f"/{name}")) and isinstance(value, dict):
            return str(value.get("string") or "")
    return ""


def _integer(value: float | None) -> int | None:
    return None if value is None else round(value)


@transaction.atomic
def record_readings(
    source: TelemetrySource,
    matched: list[tuple[IndexedDevice, Reading]],
    sampled_at: datetime.datetime,
) -> int:
    """Upserts the latest reading of each matched device and appends its raw sample; returns
    the number of samples written. One device read twice in a cycle keeps the last reading."""
    latest: dict[tuple[str, str, str], tuple[IndexedDevice, Reading]] = {}
    for device, reading in matched:
        latest[device.key] = (device, reading)
    if not latest:
        return 0
    rows = [
        (
            device.driver,
            device.pool_name,
            device.name,
            device.node_name,
            reading.uuid if not reading.is_mig else device.uuid,
            reading.uuid if reading.is_mig else "",
            reading.gpu_instance_id,
            reading.pci_bus_id,
            source.pk,
            source.is_simulated,
            sampled_at,
            _integer(reading.value("gpu_util")),
            _integer(reading.value("mem_copy_util")),
            _integer(reading.value("fb_used_mib")),
            _integer(reading.fb_total_mib),
            reading.value("power_w"),
            _integer(reading.value("temperature_c")),
        )
        for device, reading in latest.values()
    ]
    ids = _upsert_latest(rows)
    samples = [
        (
            ids[key],
            sampled_at,
            _integer(reading.value("gpu_util")),
            _integer(reading.value("mem_copy_util")),
            _integer(reading.value("fb_used_mib")),
            reading.value("power_w"),
            _integer(reading.value("temperature_c")),
        )
        for key, (_, reading) in latest.items()
    ]
    _append_samples(samples)
    return len(samples)


_LATEST_COLUMNS = (
    "driver",
    "pool_name",
    "device_name",
    "node_name",
    "uuid",
    "parent_uuid",
    "gpu_instance_id",
    "pci_bus_id",
    "source_id",
    "is_simulated",
    "sampled_at",
    "gpu_util",
    "mem_copy_util",
    "fb_used_mib",
    "fb_total_mib",
    "power_w",
    "temperature_c",
)
_KEY = 3  # the first three columns: (driver, pool, device)


def _upsert_latest(rows: list[tuple]) -> dict[tuple[str, str, str], int]:
    """Inserts or updates the latest-value rows; ``(driver, pool, device) → id``. On
    PostgreSQL through COPY into a staging table and one ``INSERT … ON CONFLICT … RETURNING``
    (Django's bulk upsert of 40,000 rows costs seconds in parameter handling alone)."""
    if connection.vendor != "postgresql":
        DeviceTelemetry.objects.bulk_create(
            [DeviceTelemetry(**dict(zip(_LATEST_COLUMNS, row, strict=True))) for row in rows],
            batch_size=_BATCH,
            update_conflicts=True,
            unique_fields=list(_LATEST_COLUMNS[:_KEY]),
            update_fields=["source" if c == "source_id" else c for c in _LATEST_COLUMNS[_KEY:]],
        )
        keys = {row[:_KEY] for row in rows}
        nodes = sorted({row[_KEY] for row in rows})
        found = DeviceTelemetry.objects.filter(node_name__in=nodes).values_list(
            "pk", "driver", "pool_name", "device_name"
        )
        return {(d, p, n): pk for pk, d, p, n in found if (d, p, n) in keys}
    quote = connection.ops.quote_name
    table = quote(DeviceTelemetry._meta.db_table)
    stage = quote("telemetry_stage_latest")
    columns = ", ".join(quote(c) for c in _LATEST_COLUMNS)
    updates = ", ".join(f"{quote(c)} = EXCLUDED.{quote(c)}" for c in _LATEST_COLUMNS[_KEY:])
    key = ", ".join(quote(c) for c in _LATEST_COLUMNS[:_KEY])
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {stage} ON COMMIT DROP AS "  # noqa: S608
            f"SELECT {columns} FROM {table} WITH NO DATA"
        )
        with cursor.cursor.copy(f"COPY {stage} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        cursor.execute(
            f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {stage} "  # noqa: S608
            f"ON CONFLICT ({key}) DO UPDATE SET {updates} RETURNING id, {key}"
        )
        found = cursor.fetchall()
        cursor.execute(f"DROP TABLE {stage}")
    return {(d, p, n): pk for pk, d, p, n in found}


def _append_samples(samples: list[tuple]) -> None:
    if connection.vendor != "postgresql":
        DeviceSample.objects.bulk_create(
            [DeviceSample(**dict(zip(_SAMPLE_COLUMNS, row, strict=True))) for row in samples],
            batch_size=_BATCH,
        )
        return
    quote = connection.ops.quote_name
    columns = ", ".join(quote(name) for name in _SAMPLE_COLUMNS)
    sql = f"COPY {quote(DeviceSample._meta.db_table)} ({columns}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for row in samples:
            copy.write_row(row)
