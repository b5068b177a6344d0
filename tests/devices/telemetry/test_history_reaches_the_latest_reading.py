"""A utilisation history read from rollups (the default 24 h) ends with the reading the device
page shows as now: its last two buckets come from the raw samples, which the roll-up (every
minute, closed buckets only) has not reached yet."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from devices.models import Device, DeviceRollup, DeviceTelemetry, Resolution, TelemetrySource
from devices.telemetry.ingest import ingest_source, roll_up

pytestmark = pytest.mark.usefixtures("mirrored_cluster")
MINUTE = datetime.timedelta(minutes=1)


def bucket_of(seconds: int, moment: datetime.datetime) -> datetime.datetime:
    """The start of the ``seconds``-long bucket ``moment`` falls in."""
    epoch = int(moment.timestamp())
    return datetime.datetime.fromtimestamp(epoch - epoch % seconds, tz=datetime.UTC)


def url(device: Device) -> str:
    return f"/api/v1/devices/{device.driver}/{device.pool_name}/{device.name}/utilisation/"


@pytest.fixture
def h100(http_server, exporter_routes) -> Device:
    """dgx-h100-01's gpu-0 (the exporter's first H100 NVL: 87 %), read every 15 s for the
    last minute, with an hour of older rollups at 20 %."""
    exporters = TelemetrySource.objects.create(
        name="exporters", kind="exporters", exporter_targets=[http_server(exporter_routes)]
    )
    now = timezone.now()
    for seconds in (60, 45, 30, 15, 0):
        ingest_source(exporters, now - datetime.timedelta(seconds=seconds), force=True)
    device = Device.objects.get(node_name="dgx-h100-01", name="gpu-0")
    reading = DeviceTelemetry.objects.get(pool_name=device.pool_name, device_name=device.name)
    start = bucket_of(300, now) - 12 * 5 * MINUTE
    for bucket in range(10):
        DeviceRollup.objects.create(
            device=reading,
            resolution=Resolution.FIVE_MINUTES,
            bucket_start=start + bucket * 5 * MINUTE,
            samples=20,
            gpu_util_avg=20.0,
            power_w_avg=150.0,
        )
    return device


def test_the_default_range_ends_with_the_latest_reading(client_as, bob, h100):
    answer = client_as(bob).get(url(h100)).json()

    assert (answer["range"], answer["resolution"]) == ("24h", "5m")
    points = answer["series"]["gpu_util"]
    assert [value for _, value in points[:10]] == [20.0] * 10
    now_bucket = bucket_of(300, timezone.now())
    moment, value = points[-1]
    assert parse_datetime(moment) == now_bucket and value == 87.0  # the page's "now"
    assert answer["latest"]["gpu_util"] == 87 and answer["latest"]["stale"] is False


def test_after_a_roll_up_no_bucket_is_read_twice(client_as, bob, h100):
    roll_up()
    DeviceRollup.objects.filter(resolution=Resolution.FIVE_MINUTES).update(gpu_util_avg=50.0)

    points = client_as(bob).get(url(h100)).json()["series"]["gpu_util"]

    moments = [parse_datetime(moment) for moment, _ in points]
    assert moments == sorted(set(moments))
    assert points[-1][1] == 87.0  # the open bucket from the samples, never a rollup of it


def test_the_page_draws_the_latest_reading_on_its_default_range(client_as, bob, h100):
    page = client_as(bob).get(h100.get_absolute_url()).content.decode()

    assert "87 %" in page  # the latest reading …
    assert ": 87%</title>" in page  # … and the chart's last point


def test_the_node_history_ends_with_its_latest_readings_too(client_as, bob, h100):
    points = client_as(bob).get("/api/v1/nodes/dgx-h100-01/utilisation/").json()["series"]

    # gpu-0 at 87 % and gpu-1 at 0 % (the exporter's pair) in the open bucket.
    assert points["gpu_util"][-1][1] == 43.5


def test_an_hourly_range_ends_with_the_latest_reading(client_as, bob, h100):
    week = client_as(bob).get(url(h100), {"range": "7d"}).json()

    moment, value = week["series"]["gpu_util"][-1]
    assert parse_datetime(moment) == bucket_of(3600, timezone.now())
    assert value == 87.0
