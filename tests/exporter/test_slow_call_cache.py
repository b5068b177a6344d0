"""Slow NVML calls (identity, MIG layout, NVLink peers, topology) are made once per TTL;
readings are made on every scrape."""

from __future__ import annotations

from exporter.nvml import NvmlReader
from harness.fake_nvml import FakeNvml
from tests.exporter.conftest import FakeClock

SLOW_CALLS = [
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetPciInfo",
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetMigDeviceHandleByIndex",
    "nvmlGpuInstanceGetInfo",
    "nvmlDeviceGetNvLinkState",
    "nvmlDeviceGetNvLinkRemotePciInfo",
    "nvmlDeviceGetTopologyCommonAncestor",
    "nvmlSystemGetDriverVersion",
    "nvmlDeviceGetCount",
]


def test_slow_calls_are_made_once_and_readings_every_scrape(
    fake: FakeNvml, reader: NvmlReader
) -> None:
    reader.read()
    after_first = {call: fake.calls[call] for call in SLOW_CALLS}
    memory_reads = fake.calls["nvmlDeviceGetMemoryInfo"]

    reader.read()
    reader.read()

    healthy = {call: fake.calls[call] for call in SLOW_CALLS}
    # The lost GPU retries its identity every scrape; every healthy GPU's facts are cached.
    lost_gpu_retries = {"nvmlDeviceGetPciInfo": 2}
    assert {call: healthy[call] - after_first[call] for call in SLOW_CALLS} == {
        call: lost_gpu_retries.get(call, 0) for call in SLOW_CALLS
    }
    assert fake.calls["nvmlDeviceGetMemoryInfo"] == 3 * memory_reads
    assert fake.calls["nvmlDeviceGetHandleByIndex"] == 4 + 2  # kept, but the lost GPU's retried
    assert fake.calls["nvmlInit"] == 1


def test_slow_calls_are_made_again_after_the_ttl(
    fake: FakeNvml, reader: NvmlReader, clock: FakeClock
) -> None:
    reader.read()
    names = fake.calls["nvmlDeviceGetName"]
    topology = fake.calls["nvmlDeviceGetTopologyCommonAncestor"]

    clock.now += 299
    reader.read()
    assert fake.calls["nvmlDeviceGetName"] == names

    clock.now += 2
    reader.read()
    assert fake.calls["nvmlDeviceGetName"] == 2 * names
    assert fake.calls["nvmlDeviceGetTopologyCommonAncestor"] == 2 * topology


def test_a_mig_reconfiguration_shows_after_the_ttl(
    fake: FakeNvml, reader: NvmlReader, clock: FakeClock
) -> None:
    assert [mig.profile for mig in reader.read().gpus[0].mig_devices] == ["3g.20gb", "2g.10gb"]
    del fake.gpus[0].migs[1]

    clock.now += 301
    assert [mig.profile for mig in reader.read().gpus[0].mig_devices] == ["3g.20gb"]
