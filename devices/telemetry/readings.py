"""Readings: one device's values at one scrape, parsed from dcgm-exporter-style series.

Our exporter and dcgm-exporter name series and labels alike (``DCGM_FI_DEV_GPU_UTIL{UUID,
pci_bus_id, Hostname, GPU_I_ID, GPU_I_PROFILE}``), whether they are scraped directly
(Prometheus text) or read back from a Prometheus server (its query API), so both paths end
in the same :class:`Reading`. Pure: no Django.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from prometheus_client.parser import text_string_to_metric_families

__all__ = [
    "METRICS",
    "Reading",
    "SeriesKey",
    "normalise_pci_bus_id",
    "readings_from_series",
    "readings_from_text",
]

# dcgm-exporter series → Reading field (units as dcgm-exporter reports them).
METRICS = {
    "DCGM_FI_DEV_GPU_UTIL": "gpu_util",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "mem_copy_util",
    "DCGM_FI_DEV_FB_USED": "fb_used_mib",
    "DCGM_FI_DEV_FB_FREE": "fb_free_mib",
    "DCGM_FI_DEV_POWER_USAGE": "power_w",
    "DCGM_FI_DEV_GPU_TEMP": "temperature_c",
}

# (Hostname, GPU UUID, PCI bus id, GPU instance id or "", GPU instance profile or "")
SeriesKey = tuple[str, str, str, str, str]


@lru_cache(maxsize=65536)
def normalise_pci_bus_id(value: str) -> str:
    """``00000000:1B:00.0`` (NVML, 8-digit domain) and ``0000:1b:00.0`` (the DRA driver's
    ``resource.kubernetes.io/pciBusID``) as one spelling: 4-digit domain, lower case."""
    value = value.strip().lower()
    domain, sep, rest = value.partition(":")
    if not sep or not rest:
        return value
    return f"{domain[-4:].rjust(4, '0')}:{rest}"


@dataclass
class Reading:
    hostname: str
    uuid: str
    pci_bus_id: str
    gpu_instance_id: int | None = None
    profile: str = ""
    values: dict[str, float] = field(default_factory=dict)

    @property
    def is_mig(self) -> bool:
        return self.gpu_instance_id is not None

    def value(self, name: str) -> float | None:
        return self.values.get(name)

    @property
    def fb_total_mib(self) -> float | None:
        used, free = self.values.get("fb_used_mib"), self.values.get("fb_free_mib")
        return None if used is None or free is None else used + free


def _key(labels: Mapping[str, str]) -> SeriesKey:
    return (
        labels.get("Hostname", ""),
        labels.get("UUID", ""),
        normalise_pci_bus_id(labels.get("pci_bus_id", "")),
        labels.get("GPU_I_ID", ""),
        labels.get("GPU_I_PROFILE", ""),
    )


def readings_from_series(series: Iterable[tuple[str, Mapping[str, str], float]]) -> list[Reading]:
    """Groups ``(metric name, labels, value)`` samples into one reading per device; series
    other than :data:`METRICS`, NaN and infinite values are ignored."""
    found: dict[SeriesKey, Reading] = {}
    for name, labels, value in series:
        field_name = METRICS.get(name)
        if field_name is None or not math.isfinite(value):
            continue
        key = _key(labels)
        reading = found.get(key)
        if reading is None:
            instance = key[3]
            reading = found[key] = Reading(
                hostname=key[0],
                uuid=key[1],
                pci_bus_id=key[2],
                gpu_instance_id=int(instance) if instance.isdigit() else None,
                profile=key[4],
            )
        reading.values[field_name] = value
    return list(found.values())


def readings_from_text(text: str) -> list[Reading]:
    """The readings in one Prometheus text exposition (an exporter's ``/metrics``)."""
    return readings_from_series(
        (sample.name, sample.labels, sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    )
