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

import msgspec
from prometheus_client.parser import text_string_to_metric_families

__all__ = [
    "METRICS",
    "Reading",
    "SeriesKey",
    "PROMETHEUS_LABELS",
    "PrometheusError",
    "SCRAPED_METRICS",
    "normalise_pci_bus_id",
    "prometheus_query",
    "readings_from_prometheus",
    "readings_from_series",
    "readings_from_text",
]

# dcgm-exporter series → Reading field (units as dcgm-exporter reports them).
METRICS = {
    "DCGM_FI_DEV_GPU_UTIL": "gpu_util",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "mem_copy_util",
    "DCGM_FI_DEV_FB_USED": "fb_used_mib",
    "DCGM_FI_DEV_FB_FREE": "fb_free_mib",
    # The driver's reserve (our exporter, dcgm-exporter where configured): part of the total.
    "DCGM_FI_DEV_FB_RESERVED": "fb_reserved_mib",
    "DCGM_FI_DEV_POWER_USAGE": "power_w",
    "DCGM_FI_DEV_GPU_TEMP": "temperature_c",
}
# A scrape has every series at hand: the exact total too (our exporter publishes it; from
# Prometheus it would cost one more query for what used + free + reserved gives within 2 MiB).
SCRAPED_METRICS = {**METRICS, "DCGM_FI_DEV_FB_TOTAL": "fb_total_mib"}

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
        """The total where it was read, else used + free + the driver's reserve where that is
        published apart (NVML's version-2 memory information, whose used leaves it out;
        version 1 counts it in used)."""
        total = self.values.get("fb_total_mib")
        if total is not None:
            return total
        used, free = self.values.get("fb_used_mib"), self.values.get("fb_free_mib")
        if used is None or free is None:
            return None
        return used + free + self.values.get("fb_reserved_mib", 0)


def _key(labels: Mapping[str, str]) -> SeriesKey:
    return (
        labels.get("Hostname", ""),
        labels.get("UUID", ""),
        normalise_pci_bus_id(labels.get("pci_bus_id", "")),
        labels.get("GPU_I_ID", ""),
        labels.get("GPU_I_PROFILE", ""),
    )


def readings_from_series(
    series: Iterable[tuple[str, Mapping[str, str], float]],
    metrics: Mapping[str, str] = METRICS,
) -> list[Reading]:
    """Groups ``(metric name, labels, value)`` samples into one reading per device; series
    other than ``metrics``, NaN and infinite values are ignored."""
    found: dict[SeriesKey, Reading] = {}
    for name, labels, value in series:
        field_name = metrics.get(name)
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
        (
            (sample.name, sample.labels, sample.value)
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        ),
        SCRAPED_METRICS,
    )


# The labels the join needs; a Prometheus query keeps only these (see prometheus_query).
PROMETHEUS_LABELS = ("Hostname", "UUID", "pci_bus_id", "GPU_I_ID", "GPU_I_PROFILE")


def prometheus_query(metric: str) -> str:
    """The instant query for one series: one value per device, with only the labels the join
    needs. Prometheus drops the rest (dcgm-exporter adds a dozen: pod, container, driver
    version, …) instead of this process decoding them, and ``max`` folds a GPU scraped by
    two jobs into one value. A recording rule of the same shape serves it as well."""
    return f"max by ({', '.join(PROMETHEUS_LABELS)}) ({metric})"


class PrometheusError(ValueError):
    """A Prometheus answer that is not a successful instant vector."""


# The instant-query answer, decoded straight into these (msgspec: no dict per series, labels
# other than the join's skipped while parsing; gc=False since they hold no cycles). At 40,000
# GPUs six answers hold 240,000 series: the stdlib's json took ~1.8 s, this ~0.2 s.
class _Labels(msgspec.Struct, gc=False):
    Hostname: str = ""
    UUID: str = ""
    pci_bus_id: str = ""
    GPU_I_ID: str = ""
    GPU_I_PROFILE: str = ""


class _Sample(msgspec.Struct, gc=False):
    metric: _Labels
    # Prometheus sends the value as a string: read as a number while parsing (strict=False),
    # except for the spellings msgspec does not take ("+Inf"): then as text (_TextSample).
    value: tuple[float, float]


class _TextSample(msgspec.Struct, gc=False):
    metric: _Labels
    value: tuple[float, str]


class _Data(msgspec.Struct, gc=False):
    resultType: str  # noqa: N815 - Prometheus's name
    result: list[_Sample]


class _TextData(msgspec.Struct, gc=False):
    resultType: str  # noqa: N815 - Prometheus's name
    result: list[_TextSample]


class _Answer(msgspec.Struct, gc=False):
    status: str
    data: _Data | None = None
    errorType: str = ""  # noqa: N815 - Prometheus's name
    error: str = ""


class _TextAnswer(msgspec.Struct, gc=False):
    status: str
    data: _TextData | None = None
    errorType: str = ""  # noqa: N815 - Prometheus's name
    error: str = ""


_decoder = msgspec.json.Decoder(_Answer, strict=False)
_text_decoder = msgspec.json.Decoder(_TextAnswer)


def _vector(body: bytes) -> list[_Sample] | list[_TextSample]:
    answer: _Answer | _TextAnswer
    try:
        answer = _decoder.decode(body)
    except msgspec.ValidationError:
        try:
            answer = _text_decoder.decode(body)
        except msgspec.DecodeError as error:  # ValidationError is a DecodeError
            raise PrometheusError(f"not an instant-query answer: {error}") from None
    except msgspec.DecodeError as error:
        raise PrometheusError(f"not an instant-query answer: {error}") from None
    if answer.status != "success":
        raise PrometheusError(
            ": ".join(part for part in (answer.errorType, answer.error) if part) or answer.status
        )
    if answer.data is None or answer.data.resultType != "vector":
        kind = answer.data.resultType if answer.data else "no data"
        raise PrometheusError(f"expected an instant vector, got {kind}")
    return answer.data.result


def readings_from_prometheus(answers: Mapping[str, bytes]) -> list[Reading]:
    """The readings in the answers to :func:`prometheus_query` of each metric (metric name →
    answer body). Raises :class:`PrometheusError` for an answer that is not a vector."""
    found: dict[str | tuple[str, str, str, str], Reading] = {}
    isfinite = math.isfinite
    for metric, body in answers.items():
        field_name = METRICS[metric]
        for sample in _vector(body):
            labels = sample.metric
            value = sample.value[1]
            if value.__class__ is not float:
                try:
                    value = float(value)
                except ValueError:
                    continue
            if not isfinite(value):
                continue
            # A whole GPU by its UUID alone (the same GPU under other labels is one reading);
            # otherwise every label the join may use.
            uuid = labels.UUID
            key = (
                uuid
                if uuid and not labels.GPU_I_ID
                else (uuid, labels.GPU_I_ID, labels.Hostname, labels.pci_bus_id)
            )
            reading = found.get(key)
            if reading is None:
                instance = labels.GPU_I_ID
                reading = found[key] = Reading(
                    hostname=labels.Hostname,
                    uuid=labels.UUID,
                    pci_bus_id=normalise_pci_bus_id(labels.pci_bus_id),
                    gpu_instance_id=int(instance) if instance.isdigit() else None,
                    profile=labels.GPU_I_PROFILE,
                )
            reading.values[field_name] = value
    return list(found.values())
