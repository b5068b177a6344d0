"""Writes joined readings: the latest value per device and the raw samples.

On PostgreSQL a cycle is two statements whatever the cluster's size: one ``COPY`` of the
samples and one ``UPDATE … FROM`` them of the latest-value rows. Rows are inserted (a staged
upsert) only for a device read for the first time or whose identity or memory size changed;
their ids are kept in this process between cycles. Elsewhere (SQLite) Django's bulk upsert.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from django.db import connection, transaction
from django.db.models import Count, Max

from devices.models import Device, DeviceSample, DeviceState, DeviceTelemetry, TelemetrySource
from devices.telemetry.join import DeviceIndex, IndexedDevice
from devices.telemetry.readings import Reading

__all__ = [
    "cached_device_index",
    "device_index",
    "forget_cached_state",
    "held_devices",
    "record_readings",
]

_BATCH = 2000
_SAMPLE_COLUMNS = (
    "device_id",
    "sampled_at",
    "power_w",
    "fb_used_mib",
    "gpu_util",
    "mem_copy_util",
    "temperature_c",
)
# A cached join index is rebuilt when the device rows change (count or newest id) or after this.
_INDEX_TTL_SECONDS = 300.0


def device_index() -> DeviceIndex:
    """The mirrored devices of nodes, which readings can join to. Two queries: whole devices
    without their attributes, partitions with them (their ``profile``)."""
    devices = Device.objects.exclude(node_name="").order_by()
    columns = ("driver", "pool_name", "name", "node_name", "uuid", "parent_uuid", "pci_bus_id")
    whole = devices.filter(parent_uuid="").values_list(*columns, "state")
    partitions = devices.exclude(parent_uuid="").values(*columns, "state", "attributes")
    return DeviceIndex.from_rows(
        [
            *(dict(zip((*columns, "state"), row, strict=True)) for row in whole),
            *({**row, "profile": _attribute(row["attributes"], "profile")} for row in partitions),
        ]
    )


@dataclass
class _Cached:
    lock: threading.Lock = field(default_factory=threading.Lock)
    index: DeviceIndex | None = None
    index_version: tuple[int, int | None] = (0, None)
    index_built: float = 0.0
    # (driver, pool, device) → (DeviceTelemetry id, identity columns as stored)
    rows: dict[tuple[str, str, str], tuple[int, tuple]] = field(default_factory=dict)


_cached = _Cached()


def forget_cached_state() -> None:
    """Drops this process's cached join index and row ids (tests; a schema reset)."""
    with _cached.lock:
        _cached.index = None
        _cached.rows = {}


def cached_device_index() -> DeviceIndex:
    """:func:`device_index`, rebuilt only when devices were added or removed (their count or
    newest id moved) or every five minutes. At 40,000 GPUs a build costs ~0.5 s, a check one
    indexed aggregate. Its ``state`` may be old: ask :func:`held_devices` where it matters."""
    version = Device.objects.exclude(node_name="").aggregate(n=Count("pk"), newest=Max("pk"))
    key = (version["n"], version["newest"])
    with _cached.lock:
        fresh = time.monotonic() - _cached.index_built < _INDEX_TTL_SECONDS
        if _cached.index is not None and _cached.index_version == key and fresh:
            return _cached.index
    index = device_index()
    with _cached.lock:
        _cached.index, _cached.index_version, _cached.index_built = index, key, time.monotonic()
    return index


def held_devices(parent_uuids: Iterable[str]) -> set[tuple[str, str, str]]:
    """Keys of the partitions of ``parent_uuids`` a claim holds now (one query)."""
    rows = Device.objects.filter(
        parent_uuid__in=set(parent_uuids), state__in=[DeviceState.ALLOCATED, DeviceState.SHARED]
    ).values_list("driver", "pool_name", "name")
    return {(d, p, n) for d, p, n in rows}


def _attribute(attributes: object, name: str) -> str:
    if not isinstance(attributes, dict):
        return ""
    for key, value in attributes.items():
        if (key == name or key.endswith(f"/{name}")) and isinstance(value, dict):
            return str(value.get("string") or "")
    return ""


def _values(reading: Reading) -> tuple:
    """gpu_util, mem_copy_util, fb_used_mib, fb_total_mib, power_w, temperature_c."""
    get = reading.values.get
    util, copy, used, total = get("gpu_util"), get("mem_copy_util"), get("fb_used_mib"), None
    if used is not None:
        total = reading.fb_total_mib
    temperature = get("temperature_c")
    return (
        None if util is None else round(util),
        None if copy is None else round(copy),
        None if used is None else round(used),
        None if total is None else round(total),
        get("power_w"),
        None if temperature is None else round(temperature),
    )


def _identity(device: IndexedDevice, reading: Reading) -> tuple:
    """node_name, uuid, parent_uuid, gpu_instance_id, pci_bus_id as the latest row keeps them,
    and fb_total_mib: what a sample does not carry, so a change goes through the upsert."""
    total = reading.fb_total_mib
    # A partition keeps its parent GPU's UUID as parent, however it was read (a MIG reading
    # carries the parent's UUID; the simulation's reading of a partition is no MIG reading).
    parent_uuid = device.parent_uuid or (reading.uuid if reading.is_mig else "")
    return (
        device.node_name,
        device.uuid if parent_uuid else reading.uuid,
        parent_uuid,
        reading.gpu_instance_id,
        reading.pci_bus_id,
        None if total is None else round(total),
    )


@transaction.atomic
def record_readings(
    source: TelemetrySource,
    matched: list[tuple[IndexedDevice, Reading]],
    sampled_at: datetime.datetime,
) -> int:
    """Upserts the latest reading of each matched device and appends its raw sample; returns
    the number of samples written. A device read twice in a cycle (two label sets) gets
    the values of both, the later reading's where both have one."""
    latest: dict[tuple[str, str, str], tuple[IndexedDevice, Reading]] = {}
    for device, reading in matched:
        earlier = latest.get(device.key)
        if earlier is not None:  # the same device under another label set: merge
            reading = replace(reading, values={**earlier[1].values, **reading.values})
        latest[device.key] = (device, reading)
    if not latest:
        return 0

    def row(key: tuple[str, str, str], identity: tuple, values: tuple) -> tuple:
        return (*key, *identity[:5], source.pk, source.is_simulated, sampled_at, *values)

    if connection.vendor != "postgresql":
        entries = [(k, _identity(d, r), _values(r)) for k, (d, r) in latest.items()]
        ids = _upsert_latest([row(*entry) for entry in entries])
        _append_samples([(ids[k], sampled_at, *v) for k, _, v in entries])
        return len(ids)
    # Devices whose latest row this process knows with the same identity are updated from
    # their sample below; the others (new, changed, or not known here) are upserted first.
    with _cached.lock:
        known = dict(_cached.rows)
    if known and DeviceTelemetry.objects.count() < len(known):
        known = {}  # rows were deleted behind this process's back
    moment = sampled_at.isoformat()
    lines: list[str] = []  # COPY text of the samples, built in the one pass over the devices
    fresh: list[tuple[tuple[str, str, str], tuple, tuple]] = []
    for key, (device, reading) in latest.items():
        identity, values = _identity(device, reading), _values(reading)
        entry = known.get(key)
        if entry is not None and entry[1] == identity:
            lines.append(_sample_line(entry[0], moment, values))
        else:
            fresh.append((key, identity, values))
    updated = len(lines)
    if fresh:
        inserted = _upsert_latest([row(*entry) for entry in fresh])
        with _cached.lock:
            for key, identity, values in fresh:
                _cached.rows[key] = (inserted[key], identity)
                lines.append(_sample_line(inserted[key], moment, values))
    _copy_samples("".join(lines))
    if updated:
        with connection.cursor() as cursor:
            cursor.execute(
                _UPDATE_FROM_SAMPLES,
                {"source": source.pk, "simulated": source.is_simulated, "at": sampled_at},
            )
            if cursor.rowcount < updated:  # rows deleted meanwhile: the next cycle adds them
                forget_cached_state()
    return len(lines)


_NULL = "\\N"


def _sample_line(device_id: int, moment: str, values: tuple) -> str:
    """One sample as a line of COPY text (every value a number or None)."""
    util, copy, used, _, power, temperature = values
    return (
        f"{device_id}\t{moment}\t{_NULL if power is None else power}\t"
        f"{_NULL if used is None else used}\t{_NULL if util is None else util}\t"
        f"{_NULL if copy is None else copy}\t{_NULL if temperature is None else temperature}\n"
    )


# The latest-value rows of the cycle's known devices, from the samples just written: no
# parameter per device (40,000 GPUs' values as array parameters cost ~1 s to encode in
# Python); rows the upsert wrote this cycle already carry its time and are left alone.
_UPDATE_FROM_SAMPLES = """
    UPDATE devices_devicetelemetry AS t SET
        source_id = %(source)s, is_simulated = %(simulated)s, sampled_at = s.sampled_at,
        gpu_util = s.gpu_util, mem_copy_util = s.mem_copy_util, fb_used_mib = s.fb_used_mib,
        power_w = s.power_w, temperature_c = s.temperature_c
    FROM devices_devicesample AS s
    WHERE s.sampled_at = %(at)s AND t.id = s.device_id AND t.sampled_at <> s.sampled_at
"""


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
    """``(device_id, sampled_at, gpu_util, mem_copy_util, fb_used_mib, fb_total_mib, power_w,
    temperature_c)`` rows, through Django (SQLite)."""
    DeviceSample.objects.bulk_create(
        [
            DeviceSample(
                device_id=device_id,
                sampled_at=at,
                gpu_util=util,
                mem_copy_util=copy,
                fb_used_mib=used,
                power_w=power,
                temperature_c=temperature,
            )
            for device_id, at, util, copy, used, _, power, temperature in samples
        ],
        batch_size=_BATCH,
    )


def _copy_samples(text: str) -> None:
    """COPY of sample lines (:func:`_sample_line`), one buffer: psycopg's ``write_row`` costs
    ~8 µs a row."""
    quote = connection.ops.quote_name
    columns = ", ".join(quote(name) for name in _SAMPLE_COLUMNS)
    sql = f"COPY {quote(DeviceSample._meta.db_table)} ({columns}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        copy.write(text)
