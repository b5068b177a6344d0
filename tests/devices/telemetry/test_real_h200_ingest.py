"""A real GPU's readings reach the portal: the H200 captured through the exporter
(``tests/exporter/golden/h200-driver-580/``, its README) is ingested for a mirrored device with
the capture's UUID and PCI bus id, and shows on the device's page and utilisation API."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
from django.utils.dateparse import parse_datetime

from devices.models import Device, DeviceTelemetry, TelemetrySource
from devices.telemetry.ingest import ingest_source
from exporter.nvml import NvmlReader
from harness.fake_nvml import H200_UUID, h200_capture
from mirror.store import load
from tests.exporter.conftest import serve  # noqa: F401 - a fixture: starts an exporter

CAPTURE = Path(__file__).resolve().parents[2] / "exporter" / "golden" / "h200-driver-580"


def bucket_of(seconds: int, moment: datetime.datetime) -> datetime.datetime:
    """The start of the ``seconds``-long bucket ``moment`` falls in."""
    epoch = int(moment.timestamp())
    return datetime.datetime.fromtimestamp(epoch - epoch % seconds, tz=datetime.UTC)


@pytest.fixture
def h200(db: None) -> Device:
    """The captured GPU as the NVIDIA DRA driver publishes it (``h200-node-1.json``)."""
    load(json.loads((CAPTURE / "h200-node-1.json").read_text())["items"])
    return Device.objects.get(node_name="h200-node-1", name="gpu-0")


def test_the_captured_reading_under_load_reaches_the_device_page_and_api(
    client_as, bob, h200, http_server
):
    target = http_server(
        {
            "/metrics": (200, "text/plain", (CAPTURE / "metrics-load.txt").read_bytes()),
            "/devices": (200, "application/json", (CAPTURE / "devices-load.json").read_bytes()),
        }
    )
    exporters = TelemetrySource.objects.create(
        name="h200", kind="exporters", exporter_targets=[target]
    )

    result = ingest_source(exporters)

    assert (result.samples, result.unmatched, result.error) == (1, 0, "")
    row = DeviceTelemetry.objects.get(pool_name="h200-node-1", device_name="gpu-0")
    assert (row.uuid, row.pci_bus_id) == (H200_UUID, "0000:00:06.0")
    page = client_as(bob).get(h200.get_absolute_url()).content.decode()
    assert "99 %" in page and "691 W" in page and "61 °C" in page
    # The capture's exporter still counted the driver's reserve as used (its README).
    assert "22,233 MiB of 143,771 MiB" in page
    url = f"/api/v1/devices/{h200.driver}/{h200.pool_name}/{h200.name}/utilisation/"
    answer = client_as(bob).get(url).json()
    latest = answer["latest"]
    assert (latest["gpu_util"], latest["power_w"], latest["temperature_c"]) == (99, 690.893, 61)
    assert (latest["simulated"], latest["stale"]) == (False, False)
    [(moment, util)] = answer["series"]["gpu_util"]
    [(_, power)] = answer["series"]["power_w"]
    assert parse_datetime(moment) == bucket_of(300, row.sampled_at)
    assert (util, power) == (99.0, 690.89)


def test_todays_exporter_on_the_idle_h200_shows_no_memory_used(
    client_as,
    bob,
    h200,
    serve,  # noqa: F811 - the exporter's tests' fixture, imported above
):
    # Today's exporter on loopback, reading the fake NVML that replays the idle H200.
    reader = NvmlReader(hostname="h200-node-1", library=h200_capture("idle"))
    exporters = TelemetrySource.objects.create(
        name="h200", kind="exporters", exporter_targets=[serve(reader)]
    )

    ingest_source(exporters)

    page = client_as(bob).get(h200.get_absolute_url()).content.decode()
    # nvidia-smi: 0 MiB of 143,771 MiB (the capture's exporter said 615 MiB).
    assert "0 MiB of 143,771 MiB (0.0 %)" in page
    assert "0 %" in page and "80 W" in page and "37 °C" in page
