"""Readings on the device page, and the Telemetry page of portal admins."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from devices.models import Device, DeviceRollup, DeviceTelemetry, Resolution, TelemetrySource
from devices.telemetry.ingest import ingest_source

pytestmark = pytest.mark.usefixtures("mirrored_cluster")


def h100() -> Device:
    return Device.objects.get(node_name="dgx-h100-01", name="gpu-0")


def test_a_device_page_shows_its_latest_reading_and_last_day(client_as, bob):
    device = h100()
    now = timezone.now()
    reading = DeviceTelemetry.objects.create(
        driver=device.driver,
        pool_name=device.pool_name,
        device_name=device.name,
        node_name=device.node_name,
        sampled_at=now - datetime.timedelta(seconds=20),
        gpu_util=87,
        fb_used_mib=40960,
        fb_total_mib=81920,
        power_w=512.4,
        temperature_c=61,
    )
    for i, util in enumerate((20.0, 60.0)):
        DeviceRollup.objects.create(
            device=reading,
            resolution=Resolution.FIVE_MINUTES,
            bucket_start=now - datetime.timedelta(minutes=30 - 5 * i),
            samples=20,
            gpu_util_avg=util,
        )

    page = client_as(bob).get(device.get_absolute_url()).content.decode()

    assert "87 %" in page and "40,960 MiB of 81,920 MiB (50.0 %)" in page
    assert "512 W" in page and "61 °C" in page
    assert "<svg" in page and "GPU 40.0 % on average" in page
    assert "simulated" not in page and "stale" not in page


def test_the_time_range_picker_reads_the_resolution_of_its_range(client_as, bob):
    device = h100()
    now = timezone.now()
    reading = DeviceTelemetry.objects.create(
        driver=device.driver,
        pool_name=device.pool_name,
        device_name=device.name,
        node_name=device.node_name,
        sampled_at=now,
        gpu_util=50,
        fb_total_mib=1000,
    )
    for days, util in ((3, 10.0), (2, 30.0)):  # hourly buckets within the week only
        DeviceRollup.objects.create(
            device=reading,
            resolution=Resolution.HOUR,
            bucket_start=now - datetime.timedelta(days=days),
            samples=240,
            gpu_util_avg=util,
            fb_used_mib_avg=500.0,
        )
    client = client_as(bob)

    day = client.get(device.get_absolute_url()).content.decode()
    week = client.get(f"{device.get_absolute_url()}?range=7d").content.decode()

    assert "No readings in the last 24 h" in day
    assert "Last 7 d, hourly averages; GPU 20.0 % on average." in week
    assert ": 50%</title>" in week  # memory: 500 of 1,000 MiB
    assert 'href="?range=7d" aria-current="true"' in week
    # The picker swaps the live fragment, which then polls the URL with the range.
    assert 'hx-select="#device-status"' in week


def test_an_old_reading_is_shown_stale_and_a_simulated_one_says_so(client_as, bob):
    ingest_source(TelemetrySource.objects.create(name="demo", kind="simulated"))
    DeviceTelemetry.objects.update(sampled_at=timezone.now() - datetime.timedelta(minutes=10))

    page = client_as(bob).get(h100().get_absolute_url()).content.decode()

    assert ">simulated<" in page and ">stale<" in page


def test_a_device_without_readings_says_where_they_come_from(client_as, bob):
    page = client_as(bob).get(h100().get_absolute_url()).content.decode()
    assert "No reading for this device" in page


def test_the_telemetry_page_is_for_portal_admins(client, client_as, bob, root):
    assert client.get("/telemetry/").status_code == 302
    assert client_as(bob).get("/telemetry/").status_code == 403
    empty = client_as(root).get("/telemetry/").content.decode()
    assert "No telemetry source" in empty


def test_the_telemetry_page_shows_each_sources_health(client_as, root, django_assert_num_queries):
    ok = TelemetrySource.objects.create(name="demo", kind="simulated")
    ingest_source(ok)
    TelemetrySource.objects.create(
        name="prom",
        kind="prometheus",
        url="http://prometheus.monitoring:9090",
        last_success_at=timezone.now() - datetime.timedelta(hours=1),
        last_error="Prometheus at http://prometheus.monitoring:9090: timed out",
    )
    client = client_as(root)
    client.get("/telemetry/")

    with django_assert_num_queries(7):  # session, user, sources, GPUs, fresh, readings, simulated
        page = client.get("/telemetry/").content.decode()

    assert 'data-testid="stale-alert"' in page and "prom" in page and "timed out" in page
    fresh = DeviceTelemetry.objects.count()
    assert f'data-testid="fresh-count">{fresh}<' in page
