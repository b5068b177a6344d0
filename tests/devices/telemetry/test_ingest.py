"""Ingest: readings from exporters, a Prometheus and the simulation reach the mirrored devices
they belong to, the latest per device and the raw samples are stored, health is recorded."""

from __future__ import annotations

import datetime
import json

import pytest
from django.utils import timezone

from devices.models import Device, DeviceSample, DeviceTelemetry, TelemetrySource
from devices.telemetry.ingest import due_sources, ingest_source

from .conftest import NODE, fake_prometheus

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


def test_prometheus_series_join_by_uuid_or_by_node_and_pci_bus_id(http_server):
    by_uuid = Device.objects.get(node_name="dgx-h100-01", name="gpu-3")
    by_pci = Device.objects.get(node_name="dgx-h100-02", name="gpu-5")
    answer = fake_prometheus(
        ("DCGM_FI_DEV_GPU_UTIL", {"UUID": by_uuid.uuid, "Hostname": "x", "pci_bus_id": "x"}, 77),
        ("DCGM_FI_DEV_GPU_TEMP", {"UUID": by_uuid.uuid, "Hostname": "x", "pci_bus_id": "x"}, 61),
        # The same GPU scraped by a second job: Prometheus's max folds the two.
        (
            "DCGM_FI_DEV_GPU_TEMP",
            {"UUID": by_uuid.uuid, "Hostname": "x", "pci_bus_id": "x", "pod": "b"},
            63,
        ),
        ("DCGM_FI_DEV_POWER_USAGE", {"UUID": by_uuid.uuid, "Hostname": "x"}, "NaN"),
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

    gpu3 = latest("gpu-3", by_uuid.pool_name)
    assert (gpu3.gpu_util, gpu3.temperature_c, gpu3.power_w) == (77, 63, None)
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


def test_a_query_prometheus_refuses_is_named_with_its_status_and_reason(http_server):
    # Prometheus answers a query it cannot run with 400 and its JSON error.
    refused = json.dumps(
        {"status": "error", "errorType": "bad_data", "error": "1:1: parse error: unexpected"}
    ).encode()
    prometheus = source(
        TelemetrySource.Kind.PROMETHEUS,
        url=f"http://{http_server({'/api/v1/query': (400, 'application/json', refused)})}",
    )

    result = ingest_source(prometheus)

    assert "HTTP 400: bad_data: 1:1: parse error: unexpected" in result.error
    assert not DeviceTelemetry.objects.exists()


def test_an_answer_that_is_not_an_instant_vector_is_an_error(http_server):
    matrix = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}})
    prometheus = source(
        TelemetrySource.Kind.PROMETHEUS,
        url=f"http://{http_server({'/api/v1/query': (200, 'application/json', matrix.encode())})}",
    )

    assert "expected an instant vector, got matrix" in ingest_source(prometheus).error


def test_readings_of_one_device_in_several_series_sets_are_merged(http_server):
    gpu = Device.objects.get(node_name="dgx-h100-01", name="gpu-2")
    answer = fake_prometheus(
        ("DCGM_FI_DEV_GPU_UTIL", {"UUID": gpu.uuid, "Hostname": "dgx-h100-01"}, 40),
        # Another label set (with a PCI bus id) for the same GPU: one device, both values.
        ("DCGM_FI_DEV_GPU_TEMP", {"UUID": gpu.uuid, "pci_bus_id": gpu.pci_bus_id}, 55),
    )
    prometheus = source(
        TelemetrySource.Kind.PROMETHEUS,
        url=f"http://{http_server({'/api/v1/query': (200, 'application/json', answer)})}",
    )

    assert ingest_source(prometheus).samples == 1
    row = latest("gpu-2", gpu.pool_name)
    assert (row.gpu_util, row.temperature_c) == (40, 55)


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


def test_later_cycles_update_the_latest_rows_in_place_and_survive_a_deleted_row(http_server):
    gpus = list(
        Device.objects.filter(node_name="dgx-h100-01", parent_uuid="")
        .exclude(uuid="")
        .order_by("name")
    )
    state = {"cycle": 0}

    def answer(params: dict[str, list[str]]) -> bytes:
        series = [
            ("DCGM_FI_DEV_GPU_UTIL", {"UUID": g.uuid}, 10 * state["cycle"] + i)
            for i, g in enumerate(gpus)
        ]
        return fake_prometheus(*series)(params)

    prometheus = source(
        TelemetrySource.Kind.PROMETHEUS,
        url=f"http://{http_server({'/api/v1/query': (200, 'application/json', answer)})}",
    )
    start = timezone.now()
    for cycle in range(3):
        state["cycle"] = cycle
        if cycle == 2:  # someone deletes a row: the next cycle writes it again
            DeviceTelemetry.objects.filter(device_name=gpus[0].name).delete()
        result = ingest_source(prometheus, start + datetime.timedelta(seconds=15 * cycle))
        assert (result.samples, result.error) == (len(gpus), "")

    rows = {r.device_name: r for r in DeviceTelemetry.objects.filter(node_name="dgx-h100-01")}
    assert [rows[g.name].gpu_util for g in gpus] == [20 + i for i in range(len(gpus))]
    assert {rows[g.name].sampled_at for g in gpus} == {start + datetime.timedelta(seconds=30)}
    assert DeviceSample.objects.count() == 3 * len(gpus)
