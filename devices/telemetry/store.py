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
    """The mirrored devices of nodes, which readings can join to."""
    devices = Device.objects.exclude(node_name="")
    rows = devices.order_by().values(
        "driver",
        "pool_name",
        "name",
        "node_name",
        "uuid",
        "parent_uuid",
        "pci_bus_id",
        "state",
        "attributes",
    )
    return DeviceIndex.from_rows(
        {**row, "profile": _attribute(row["attributes"], "profile")} for row in rows
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
    rows = []
    for device, reading in latest.values():
        total = reading.fb_total_mib
        rows.append(
            DeviceTelemetry(
                driver=device.driver,
                pool_name=device.pool_name,
                device_name=device.name,
                node_name=device.node_name,
                uuid=reading.uuid if not reading.is_mig else device.uuid,
                parent_uuid=reading.uuid if reading.is_mig else "",
                gpu_instance_id=reading.gpu_instance_id,
                pci_bus_id=reading.pci_bus_id,
                source=source,
                is_simulated=source.is_simulated,
                sampled_at=sampled_at,
                gpu_util=_integer(reading.value("gpu_util")),
                mem_copy_util=_integer(reading.value("mem_copy_util")),
                fb_used_mib=_integer(reading.value("fb_used_mib")),
                fb_total_mib=_integer(total),
                power_w=reading.value("power_w"),
                temperature_c=_integer(reading.value("temperature_c")),
            )
        )
    DeviceTelemetry.objects.bulk_create(
        rows,
        batch_size=_BATCH,
        update_conflicts=True,
        unique_fields=["driver", "pool_name", "device_name"],
        update_fields=[
            "node_name",
            "uuid",
            "parent_uuid",
            "gpu_instance_id",
            "pci_bus_id",
            "source",
            "is_simulated",
            "sampled_at",
            "gpu_util",
            "mem_copy_util",
            "fb_used_mib",
            "fb_total_mib",
            "power_w",
            "temperature_c",
        ],
    )
    ids = _ids([device for device, _ in latest.values()])
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


def _ids(devices: list[IndexedDevice]) -> dict[tuple[str, str, str], int]:
    """``(driver, pool, device) → DeviceTelemetry id`` for ``devices``, in one query over their
    nodes (or the whole table, one row per GPU, when a cycle covers many nodes)."""
    wanted = {device.key for device in devices}
    nodes = {device.node_name for device in devices}
    rows = DeviceTelemetry.objects.all()
    if len(nodes) <= 500:
        rows = rows.filter(node_name__in=sorted(nodes))
    found = {}
    for pk, driver, pool, name in rows.values_list("pk", "driver", "pool_name", "device_name"):
        if (driver, pool, name) in wanted:
            found[(driver, pool, name)] = pk
    return found


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
