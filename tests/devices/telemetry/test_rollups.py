"""Rollups of raw samples into 5-minute and hourly buckets, and retention."""

from __future__ import annotations

import datetime

import pytest

from devices.models import DeviceRollup, DeviceSample, DeviceTelemetry, Resolution
from devices.telemetry.ingest import prune, roll_up

T0 = datetime.datetime(2026, 11, 23, 10, 0, tzinfo=datetime.UTC)


@pytest.fixture
def gpu(db) -> DeviceTelemetry:
    return DeviceTelemetry.objects.create(
        driver="gpu.nvidia.com", pool_name="n1", device_name="gpu-0", node_name="n1", sampled_at=T0
    )


def sample(gpu: DeviceTelemetry, minutes: float, util: int, fb: int = 1000) -> None:
    DeviceSample.objects.create(
        device=gpu,
        sampled_at=T0 + datetime.timedelta(minutes=minutes),
        gpu_util=util,
        fb_used_mib=fb,
        power_w=100.0 + util,
        temperature_c=40 + util // 10,
    )


def test_closed_five_minute_buckets_hold_averages_and_maxima(gpu):
    for minute, util in ((0, 10), (1, 30), (4.9, 50), (5, 90), (9, 70)):
        sample(gpu, minute, util)

    roll_up(T0 + datetime.timedelta(minutes=12))

    buckets = {
        r.bucket_start: r for r in DeviceRollup.objects.filter(resolution=Resolution.FIVE_MINUTES)
    }
    first, second = buckets[T0], buckets[T0 + datetime.timedelta(minutes=5)]
    assert (first.samples, first.gpu_util_avg, first.gpu_util_max) == (3, 30.0, 50)
    assert (second.samples, second.gpu_util_avg, second.temperature_c_max) == (2, 80.0, 49)
    assert len(buckets) == 2  # the bucket from minute 10 is still open


def test_the_hourly_bucket_weights_its_five_minute_buckets_by_samples(gpu):
    for minute, util in ((0, 10), (1, 10), (2, 10), (5, 90)):
        sample(gpu, minute, util)

    roll_up(T0 + datetime.timedelta(hours=1, minutes=1))

    hour = DeviceRollup.objects.get(resolution=Resolution.HOUR, bucket_start=T0)
    assert (hour.samples, hour.gpu_util_avg, hour.gpu_util_max) == (4, 30.0, 90)


def test_rolling_up_again_changes_nothing_and_takes_late_samples(gpu):
    sample(gpu, 0, 10)
    roll_up(T0 + datetime.timedelta(minutes=6))
    sample(gpu, 4, 30)  # arrives late, for the last bucket written

    roll_up(T0 + datetime.timedelta(minutes=6))
    roll_up(T0 + datetime.timedelta(minutes=6))

    bucket = DeviceRollup.objects.get(resolution=Resolution.FIVE_MINUTES)
    assert (bucket.samples, bucket.gpu_util_avg) == (2, 20.0)


def test_prune_keeps_each_kind_for_its_retention(gpu, settings):
    settings.TELEMETRY_RAW_RETENTION = datetime.timedelta(hours=2)
    settings.TELEMETRY_5M_RETENTION = datetime.timedelta(days=8)
    sample(gpu, 0, 10)
    sample(gpu, 150, 10)
    for days, resolution in ((9, Resolution.FIVE_MINUTES), (1, Resolution.FIVE_MINUTES)):
        DeviceRollup.objects.create(
            device=gpu,
            resolution=resolution,
            bucket_start=T0 - datetime.timedelta(days=days),
            samples=1,
        )

    removed = prune(T0 + datetime.timedelta(hours=2, minutes=31))

    assert removed == {"samples": 1, "5m": 1, "1h": 0}
    assert DeviceSample.objects.count() == 1 and DeviceRollup.objects.count() == 1
