"""Framebuffer memory comes from NVML's version-2 memory information (used without the driver's
reserve, the reserve on its own), falling back to version 1 where the driver has no v2."""

from __future__ import annotations

from exporter.nvml import NvmlReader
from harness.fake_nvml import FakeNvml, h200_capture
from tests.exporter.conftest import FakeClock
from tests.exporter.test_not_supported import series


def memory(reader: NvmlReader) -> dict[str, str]:
    found = series(reader)
    return {
        name: found[name][0]["value"]
        for name in ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED")
        if name in found
    }


def test_an_idle_gpu_reads_no_memory_used_and_its_reserve_apart() -> None:
    reader = NvmlReader(hostname="h200-node-1", library=h200_capture("idle"))

    assert memory(reader) == {
        "DCGM_FI_DEV_FB_USED": "0.0",
        "DCGM_FI_DEV_FB_FREE": "143155.0",
        "DCGM_FI_DEV_FB_RESERVED": "614.0",
    }


def test_a_driver_without_v2_is_asked_once_then_read_with_v1(clock: FakeClock) -> None:
    fake = h200_capture("idle", memory_v2=False)
    reader = NvmlReader(hostname="h200-node-1", library=fake, clock=clock)

    first, second = memory(reader), memory(reader)

    # Version 1's used includes the reserve, and there is no reserve to publish.
    assert first == second == {"DCGM_FI_DEV_FB_USED": "615.0", "DCGM_FI_DEV_FB_FREE": "143155.0"}
    assert fake.calls["nvmlDeviceGetMemoryInfo"] == 3  # one v2 refusal, then v1 each scrape


def test_a_device_without_v2_support_is_read_with_v1_and_the_others_with_v2(
    fake: FakeNvml, reader: NvmlReader
) -> None:
    original = fake.nvmlDeviceGetMemoryInfo

    def v2_unsupported_on_gpu_1(handle, version=None):  # type: ignore[no-untyped-def]
        if version and handle.gpu == 1 and handle.mig is None:
            raise fake.NVMLError(fake.NVML_ERROR_NOT_SUPPORTED)
        return original(handle, version=version)

    fake.nvmlDeviceGetMemoryInfo = v2_unsupported_on_gpu_1  # type: ignore[method-assign]

    found = series(reader)

    used = {s["gpu"]: s["value"] for s in found["DCGM_FI_DEV_FB_USED"] if "GPU_I_ID" not in s}
    reserved = {s["gpu"] for s in found["DCGM_FI_DEV_FB_RESERVED"] if "GPU_I_ID" not in s}
    assert used == {"0": "12800.0", "1": str(21504.0 + 502), "2": "0.0"}
    assert reserved == {"0", "2"}
