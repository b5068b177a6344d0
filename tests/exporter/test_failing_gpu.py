"""One failing GPU never breaks the others: its error is reported, the rest still export."""

from __future__ import annotations

from exporter.nvml import NvmlReader
from harness.fake_nvml import NVML_ERROR_GPU_IS_LOST, NVML_ERROR_UNKNOWN, FakeNvml


def test_a_lost_gpu_is_reported_and_the_others_are_read(reader: NvmlReader) -> None:
    node = reader.read()

    assert [gpu.is_healthy for gpu in node.gpus] == [True, True, True, False]
    lost = node.gpus[3]
    assert (lost.error, lost.error_code) == ("GPU is lost", NVML_ERROR_GPU_IS_LOST)
    assert node.gpus[1].values["DCGM_FI_DEV_GPU_UTIL"] == 87
    assert {(pair.gpu, pair.peer) for pair in node.topology} == {(0, 1), (0, 2), (1, 2)}


def test_a_gpu_failing_mid_life_keeps_its_identity_and_recovers(
    fake: FakeNvml, reader: NvmlReader
) -> None:
    uuid = reader.read().gpus[1].uuid
    fake.gpus[1].fail_code = NVML_ERROR_UNKNOWN

    failed = reader.read().gpus[1]
    assert (failed.is_healthy, failed.uuid, failed.error_code) == (False, uuid, NVML_ERROR_UNKNOWN)
    assert failed.pci_bus_id == "00000000:1B:00.0"

    fake.gpus[1].fail_code = None
    handles = fake.calls["nvmlDeviceGetHandleByIndex"]
    recovered = reader.read().gpus[1]
    assert recovered.is_healthy and recovered.values["DCGM_FI_DEV_FB_USED"] == 21504
    assert fake.calls["nvmlDeviceGetHandleByIndex"] == handles + 2  # GPU 1 again, and lost GPU 3


def test_a_failing_mig_device_fails_its_gpu_only(fake: FakeNvml, reader: NvmlReader) -> None:
    reader.read()
    fake.gpus[0].unsupported.add("nvmlDeviceGetMemoryInfo")  # still not an error
    assert reader.read().gpus[0].is_healthy

    fake.gpus[0].fail_code = NVML_ERROR_UNKNOWN
    node = reader.read()
    assert [gpu.is_healthy for gpu in node.gpus] == [False, True, True, False]
