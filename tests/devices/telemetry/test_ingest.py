"""Ingest: readings from exporters, a Prometheus and the simulation reach the mirrored devices
they belong to, the latest per device and the raw samples are stored, health is recorded."""

from __future__ import annotations

import datetime
import json

import pytest
from django.utils import timezone

from devices.models import Device, DeviceSample, DeviceTelemetry, TelemetrySource
from devices.telemetry.ingest import due_sources, ingest_source

from .conftest import NODE

A100_GPU0 = "GPU-5c7667be-08e3-6043-a2cb-0333253223b9"
pytestmark = pytest.mark.usefixtures("mirrored_cluster")


def source(kind: str, **fields) -> TelemetrySource:
    return TelemetrySource.objects.create(name=f"{kind}-test", kind=kind, **fields)


def latest(name: str, pool: str = NODE) -> DeviceTelemetry:
    return DeviceTelemetry.objects.get(pool_name=pool, device_name=name)


def test_an_exporters_gpus_and_mig_devices_reach_their_dra_devices(http_server, exporter_routes):
    target = http_server(exporter_routes)
    exporters = source(TelemetrySource.Kind.EXPORTERS, exporter_targets=[target])

    result = ingest_source(exporters)

    gpu = latest("gpu-0")
    assert (gpu.uuid, gpu.fb_used_mib, gpu.fb_total_mib, gpu.temperature_c) == (
        A100_GPU0,
        12800,
        40960,
        41,
    )
    assert gpu.gpu_util is None  # not reported in MIG mode: no reading, not 0
    mig = latest("gpu-0-mig-3g20gb-9-4")  # GPU instance 2, named by the exporter's /devices
    assert (mig.parent_uuid, mig.gpu_instance_id, mig.fb_used_mib) == (A100_GPU0, 2, 10240)
    assert latest("gpu-0-mig-2g10gb-14-0").fb_used_mib == 13
    # Its two other GPUs carry UUIDs of the DGX H100 fixture: found by UUID, whatever the node.
    assert (result.samples, result.unmatched) == (5, 0)
    exporters.refresh_from_db()
    assert exporters.last_success_at is not None and exporters.last_error == ""
    assert (exporters.last_sample_count, exporters.last_unmatched_count) == (5, 0)
    assert DeviceSample.objects.count() == 5


def test_a_failing_exporter_is_named_and_the_others_still_count(http_server, exporter_routes):
    good = http_server(exporter_routes)
    broken = http_server({"/metrics": (500, "text/plain", b"boom")})
    exporters = source(TelemetrySource.Kind.EXPORTERS, exporter_targets=[good, broken])

    result = ingest_source(exporters)

    assert result.samples == 5
    assert broken in result.error and "500" in result.error
    exporters.refresh_from_db()
    assert exporters.last_success_at is not None and broken in exporters.last_error


def test_every_exporter_down_is_an_error_and_no_success(http_server):
    down = http_server({})
    exporters = source(TelemetrySource.Kind.EXPORTERS, exporter_targets=[down])

    result = ingest_source(exporters)

    assert "every exporter failed" in result.error
    exporters.refresh_from_db()
    assert exporters.last_success_at is None and exporters.is_stale()
    assert not DeviceTelemetry.objects.exists()


def prometheus_answer(*series: tuple[str, dict, float]) -> bytes:
    result = [
        {"metric": {"__name__": name, **labels}, "value": [1700000000.0, str(value)]}
        for name, labels, value in series
    ]
    return json.dumps(
        {"status": "success", "data": {"resultType": "vector", "result": result}}
    ).encode()


def test_prometheus_series_join_by_uuid_or_by_node_and_pci_bus_id(http_server):
    by_uuid = Device.objects.get(node_name="dgx-h100-01", name="gpu-3")
    by_pci = Device.objects.get(node_name="dgx-h100-02", name="gpu-5")
    answer = prometheus_answer(
        ("DCGM_FI_DEV_GPU_UTIL", {"UUID": by_uuid.uuid, "Hostname": "x", "pci_bus_id": "x"}, 77),
        (
            "DCGM_FI_DEV_GPU_UTIL",  # no UUID label (a relabelled dcgm-exporter): by PCI bus id
            {"Hostname": "dgx-h100-02", "pci_bus_id": "0000" + by_pci.pci_bus_id.upper()},
            12,
        ),
        ("DCGM_FI_DEV_GPU_UTIL", {"UUID": "GPU-unknown", "Hostname": "elsewhere"}, 50),
    )
    prometheus = source(
        TelemetrySource.Kind.PROMETHEUS,
        url=f"http://{http_server({'/api/v1/query': (200, 'application/json', answer)})}",
    )

    result = ingest_source(prometheus)

    assert latest("gpu-3", by_uuid.pool_name).gpu_util == 77
    assert latest("gpu-5", by_pci.pool_name).gpu_util == 12
    assert (result.samples, result.unmatched) == (2, 1)


def test_a_prometheus_error_is_recorded_as_the_sources_error(http_server):
    failing = json.dumps({"status": "error", "error": "bad_data: parse error"}).encode()
    prometheus = source(
        TelemetrySource.Kind.PROMETHEUS,
        url=f"http://{http_server({'/api/v1/query': (200, 'application/json', failing)})}",
    )

    ingest_source(prometheus)

    prometheus.refresh_from_db()
    assert "bad_data: parse error" in prometheus.last_error
    assert prometheus.last_success_at is None


def test_the_simulation_reads_every_gpu_and_marks_its_readings_simulated():
    simulated = source(TelemetrySource.Kind.SIMULATED)
    now = timezone.now()

    ingest_source(simulated, now)

    whole = Device.objects.exclude(uuid="").filter(parent_uuid="").exclude(node_name="")
    held_partitions = Device.objects.exclude(parent_uuid="").held()
    assert DeviceTelemetry.objects.count() == whole.count() + held_partitions.count()
    assert held_partitions.exists()  # the fixture's MIG claims
    assert not DeviceTelemetry.objects.filter(is_simulated=False).exists()
    first = {t.natural_key: t.gpu_util for t in DeviceTelemetry.objects.all()}
    DeviceTelemetry.objects.all().delete()
    ingest_source(simulated, now, force=True)
    assert {t.natural_key: t.gpu_util for t in DeviceTelemetry.objects.all()} == first


def test_a_cycle_runs_once_per_interval_whoever_asks():
    simulated = source(TelemetrySource.Kind.SIMULATED, interval_seconds=15)
    now = timezone.now()

    assert ingest_source(simulated, now).ran
    assert not ingest_source(simulated, now + datetime.timedelta(seconds=5)).ran
    assert due_sources(now + datetime.timedelta(seconds=5)) == []
    assert due_sources(now + datetime.timedelta(seconds=15)) == [simulated]
    assert ingest_source(simulated, now + datetime.timedelta(seconds=15)).ran
