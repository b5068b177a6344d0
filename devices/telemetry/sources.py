"""Where readings come from, per ``TelemetrySource.kind``.

* **exporters**: ``GET /metrics`` (and ``/devices``, for MIG instance → DRA device names) of
  each target, a few at a time with the source's timeout. Targets are the source's list, or
  discovered: the mirrored pods of the exporter DaemonSet (``app.kubernetes.io/name:
  dra-portal-exporter``) by pod IP, else each GPU node's InternalIP, on ``exporter_port``.
  One unreachable exporter is counted and named; the others still count.
* **prometheus**: one instant query per dcgm-exporter series through the HTTP API
  (``/api/v1/query``, ``max by`` the join's labels: one value per device, nothing else to
  decode), so recording rules or federation of dcgm-exporter feed it too.
* **simulated** (the demo): readings made up for every mirrored GPU and every MIG device a
  claim holds (other placements are not instances on a real GPU either), busy while
  a claim holds the device, idle otherwise, a few held devices deliberately idle; the same
  device and minute always give the same values.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from devices.models import Device, DeviceState, Node, Pod, TelemetrySource
from devices.telemetry.join import IndexedDevice, MigNames
from devices.telemetry.readings import (
    METRICS,
    PrometheusError,
    Reading,
    prometheus_query,
    readings_from_prometheus,
    readings_from_text,
)
from devices.telemetry.store import device_index

__all__ = [
    "Collected",
    "EXPORTER_LABEL",
    "collect",
    "exporter_targets",
    "simulated_reading",
    "simulated_readings",
]

EXPORTER_LABEL = ("app.kubernetes.io/name", "dra-portal-exporter")
_PARALLEL_SCRAPES = 8
_HELD = (DeviceState.ALLOCATED, DeviceState.SHARED)
# An instant query of 6 series for 40,000 GPUs answers ~30 MB; anything past this is refused.
_MAX_BODY = 256 * 1024 * 1024


@dataclass
class Collected:
    readings: list[Reading] = field(default_factory=list)
    mig_names: dict[tuple[str, str, int], str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    # The simulation knows its devices: no join needed.
    matched: list[tuple[IndexedDevice, Reading]] | None = None


class SourceError(Exception):
    """The whole source failed (Prometheus unreachable, every exporter down)."""


def _get(url: str, timeout: float) -> bytes:
    request = urllib.request.Request(url, headers={"Accept": "text/plain, application/json"})  # noqa: S310
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - configured by an admin
        body: bytes = response.read(_MAX_BODY + 1)
    if len(body) > _MAX_BODY:
        raise ValueError(f"the answer is larger than {_MAX_BODY // 2**20} MiB")
    return body


def exporter_targets(source: TelemetrySource) -> list[str]:
    """``host:port`` of every exporter to scrape."""
    if source.exporter_targets:
        return [str(t) for t in source.exporter_targets]
    port = source.exporter_port
    targets: dict[str, str] = {}
    key, value = EXPORTER_LABEL
    for pod in Pod.objects.filter(raw__metadata__labels__contains={key: value}).only(
        "node_name", "raw"
    ):
        ip = (pod.raw.get("status") or {}).get("podIP")
        if ip and pod.node_name:
            targets[pod.node_name] = f"{ip}:{port}"
    gpu_nodes = set(Device.objects.exclude(node_name="").values_list("node_name", flat=True))
    for node in Node.objects.filter(name__in=gpu_nodes - set(targets)).only("name", "raw"):
        addresses = (node.raw.get("status") or {}).get("addresses") or []
        ip = next((a.get("address") for a in addresses if a.get("type") == "InternalIP"), None)
        if ip:
            targets[node.name] = f"{ip}:{port}"
    return sorted(targets.values())


def _scrape(target: str, timeout: float) -> tuple[list[Reading], MigNames]:
    base = target if "://" in target else f"http://{target}"
    readings = readings_from_text(_get(f"{base}/metrics", timeout).decode("utf-8", "replace"))
    names: dict[tuple[str, str, int], str] = {}
    if any(r.is_mig for r in readings):
        inventory = json.loads(_get(f"{base}/devices", timeout))
        hostname = str(inventory.get("hostname") or "")
        for gpu in inventory.get("gpus") or []:
            for mig in ((gpu.get("mig") or {}).get("devices")) or []:
                if mig.get("draDeviceName") and mig.get("gpuInstanceId") is not None:
                    names[(hostname, str(gpu.get("uuid")), int(mig["gpuInstanceId"]))] = str(
                        mig["draDeviceName"]
                    )
    return readings, names


def _collect_exporters(source: TelemetrySource) -> Collected:
    targets = exporter_targets(source)
    if not targets:
        raise SourceError("no exporter to scrape: none listed, none discovered")
    collected = Collected()
    with ThreadPoolExecutor(max_workers=min(_PARALLEL_SCRAPES, len(targets))) as pool:
        futures = {t: pool.submit(_scrape, t, source.timeout_seconds) for t in targets}
        for target, future in futures.items():
            try:
                readings, names = future.result()
            except (OSError, ValueError, urllib.error.URLError) as error:
                collected.errors.append(f"{target}: {error}")
                continue
            collected.readings.extend(readings)
            collected.mig_names.update(names)
    if len(collected.errors) == len(targets):
        raise SourceError(f"every exporter failed; first: {collected.errors[0]}")
    return collected


def _collect_prometheus(source: TelemetrySource) -> Collected:
    """One instant query per series (:func:`prometheus_query`), all in parallel."""
    if not source.url:
        raise SourceError("no Prometheus URL configured")
    base = f"{source.url.rstrip('/')}/api/v1/query"

    def fetch(metric: str) -> bytes:
        return _get(
            f"{base}?{urllib.parse.urlencode({'query': prometheus_query(metric)})}",
            source.timeout_seconds,
        )

    try:
        with ThreadPoolExecutor(max_workers=len(METRICS)) as pool:
            answers = dict(zip(METRICS, pool.map(fetch, METRICS), strict=True))
        readings = readings_from_prometheus(answers)
    except urllib.error.HTTPError as error:
        # Prometheus answers a bad query with 400 and its usual JSON error body.
        detail = error.read(4096).decode("utf-8", "replace")
        try:
            readings_from_prometheus({next(iter(METRICS)): detail.encode()})
        except PrometheusError as answer:
            detail = str(answer)
        raise SourceError(f"Prometheus at {source.url}: HTTP {error.code}: {detail}") from error
    except (OSError, ValueError, urllib.error.URLError) as error:
        raise SourceError(f"Prometheus at {source.url}: {error}") from error
    return Collected(readings=readings)


def _unit(key: tuple[str, ...], minute: int, salt: str) -> float:
    digest = hashlib.blake2b(f"{key}|{minute}|{salt}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def simulated_reading(device: IndexedDevice, at: datetime.datetime, memory_mib: int) -> Reading:
    """Made-up values for ``device`` at ``at``: a held device works (40–95 %, drifting), one
    in five held devices idles (under 3 %: something for idle detection to find), a free one
    idles. Deterministic per device and minute. A MIG device reads utilisation and memory
    only: NVML has no power or temperature of its own for it (its GPU's are read)."""
    minute = int(at.timestamp() // 60)
    key = device.key
    held = device.state in _HELD
    idle_holder = _unit(key, 0, "idle") < 0.2
    if held and not idle_holder:
        wave = 0.5 + 0.5 * math.sin(minute / 17 + _unit(key, 0, "phase") * 6.3)
        util = 40 + 55 * (0.6 * wave + 0.4 * _unit(key, minute, "util"))
        memory = 0.35 + 0.55 * _unit(key, minute // 30, "memory")
    else:
        util = 3 * _unit(key, minute, "util")
        memory = 0.01 if not held else 0.05
    used = round(memory_mib * memory)
    values: dict[str, float] = {
        "gpu_util": round(util),
        "mem_copy_util": round(util * 0.45),
        "fb_used_mib": used,
        "fb_free_mib": max(memory_mib - used, 0),
    }
    if not device.parent_uuid:
        values |= {"power_w": round(70 + util * 3.2, 1), "temperature_c": round(32 + util * 0.35)}
    return Reading(
        hostname=device.node_name,
        uuid=device.uuid or device.parent_uuid,
        pci_bus_id=device.pci_bus_id,
        values=values,
    )


def _in_mig_mode(
    gpu: IndexedDevice, memory_mib: int, partitions: list[tuple[IndexedDevice, Reading, int]]
) -> Reading:
    """A GPU whose partitions a claim holds is in MIG mode: like NVML then, no utilisation of
    the whole GPU; its memory used is its instances', its power and temperature follow their
    load (each weighted by its share of the GPU's memory)."""
    load = sum(
        (reading.values.get("gpu_util") or 0) * size / max(memory_mib, 1)
        for _, reading, size in partitions
    )
    used = round(sum(reading.values.get("fb_used_mib") or 0 for _, reading, _ in partitions))
    return Reading(
        hostname=gpu.node_name,
        uuid=gpu.uuid,
        pci_bus_id=gpu.pci_bus_id,
        values={
            "fb_used_mib": used,
            "fb_free_mib": max(memory_mib - used, 0),
            "power_w": round(70 + load * 3.2, 1),
            "temperature_c": round(32 + load * 0.35),
        },
    )


def simulated_readings(
    devices: list[IndexedDevice], at: datetime.datetime, memory_mib: dict[tuple[str, str, str], int]
) -> list[tuple[IndexedDevice, Reading]]:
    """:func:`simulated_reading` of each of ``devices`` at ``at`` (``memory_mib``: each one's
    memory; 16 GiB where unknown); a GPU with held partitions among them reads as in MIG
    mode (:func:`_in_mig_mode`)."""
    readings = [(d, simulated_reading(d, at, memory_mib.get(d.key) or 16384)) for d in devices]
    partitions: dict[str, list[tuple[IndexedDevice, Reading, int]]] = {}
    for device, reading in readings:
        if device.parent_uuid and device.state in _HELD:
            size = memory_mib.get(device.key) or 16384
            partitions.setdefault(device.parent_uuid, []).append((device, reading, size))
    return [
        (
            device,
            _in_mig_mode(device, memory_mib.get(device.key) or 16384, partitions[device.uuid])
            if not device.parent_uuid and device.uuid in partitions
            else reading,
        )
        for device, reading in readings
    ]


def _collect_simulated(now: datetime.datetime) -> Collected:
    index = device_index()
    memory = {
        (d, p, n): m // 2**20
        for d, p, n, m in Device.objects.exclude(node_name="")
        .order_by()
        .values_list("driver", "pool_name", "name", "memory_bytes")
        if m
    }
    devices = [
        device
        for device in {d.key: d for d in index.by_name.values()}.values()
        # Not a GPU the driver names (e.g. a compute-domain channel); a MIG placement exists
        # as an instance only while a claim holds it.
        if (device.uuid or device.parent_uuid)
        and not (device.parent_uuid and device.state not in _HELD)
    ]
    return Collected(matched=simulated_readings(devices, now, memory))


def collect(source: TelemetrySource, now: datetime.datetime) -> Collected:
    if source.kind == TelemetrySource.Kind.EXPORTERS:
        return _collect_exporters(source)
    if source.kind == TelemetrySource.Kind.PROMETHEUS:
        return _collect_prometheus(source)
    return _collect_simulated(now)
