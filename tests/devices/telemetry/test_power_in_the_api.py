"""The utilisation API carries what the pages show: a device's latest reading (power and
temperature included) and power over the range; a node's devices' readings and total power."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from devices.models import Device, DeviceRollup, DeviceTelemetry, Resolution

pytestmark = pytest.mark.usefixtures("mirrored_cluster")


def bucket_of(seconds: int, moment: datetime.datetime) -> datetime.datetime:
    """The start of the ``seconds``-long bucket ``moment`` falls in."""
    epoch = int(moment.timestamp())
    return datetime.datetime.fromtimestamp(epoch - epoch % seconds, tz=datetime.UTC)


@pytest.fixture
def gpus() -> list[Device]:
    """dgx-h100-01's gpu-0 and gpu-1, read 20 s ago, with a 5-minute rollup an hour ago."""
    now = timezone.now()
    devices = list(Device.objects.filter(node_name="dgx-h100-01", name__in=["gpu-0", "gpu-1"]))
    for device, power in zip(sorted(devices, key=lambda d: d.name), (512.4, 98.6), strict=True):
        reading = DeviceTelemetry.objects.create(
            driver=device.driver,
            pool_name=device.pool_name,
            device_name=device.name,
            node_name=device.node_name,
            uuid=device.uuid,
            sampled_at=now - datetime.timedelta(seconds=20),
            gpu_util=87,
            mem_copy_util=40,
            fb_used_mib=40960,
            fb_total_mib=81920,
            power_w=power,
            temperature_c=61,
        )
        DeviceRollup.objects.create(
            device=reading,
            resolution=Resolution.FIVE_MINUTES,
            bucket_start=bucket_of(300, now - datetime.timedelta(hours=1)),
            samples=20,
            gpu_util_avg=70.0,
            power_w_avg=power - 10,
        )
    return sorted(devices, key=lambda d: d.name)


def test_a_devices_utilisation_carries_its_latest_reading_with_power(client_as, bob, gpus):
    device = gpus[0]
    url = f"/api/v1/devices/{device.driver}/{device.pool_name}/{device.name}/utilisation/"

    answer = client_as(bob).get(url).json()
    page = client_as(bob).get(device.get_absolute_url()).content.decode()

    latest = answer["latest"]
    assert {k: latest[k] for k in ("gpu_util", "power_w", "temperature_c", "memory_used")} == {
        "gpu_util": 87,
        "power_w": 512.4,
        "temperature_c": 61,
        "memory_used": 50.0,
    }
    assert "512 W" in page and "61 °C" in page and "(50.0 %)" in page  # the same reading
    assert (latest["device"], latest["stale"], latest["simulated"]) == ("gpu-0", False, False)
    assert [value for _, value in answer["series"]["power_w"]] == [502.4]


def test_a_device_never_read_has_no_latest_reading(client_as, bob, gpus):
    device = Device.objects.get(node_name="dgx-h100-01", name="gpu-5")
    url = f"/api/v1/devices/{device.driver}/{device.pool_name}/{device.name}/utilisation/"

    answer = client_as(bob).get(url).json()

    assert answer["latest"] is None and answer["series"]["power_w"] == []


def test_a_nodes_utilisation_carries_each_devices_reading_and_their_total_power(
    client_as, bob, gpus
):
    answer = client_as(bob).get("/api/v1/nodes/dgx-h100-01/utilisation/").json()

    assert {d["device"]: d["power_w"] for d in answer["devices"]} == {
        "gpu-0": 512.4,
        "gpu-1": 98.6,
    }
    [(_, total)] = answer["series"]["power_w"]
    assert total == pytest.approx(502.4 + 88.6)
