"""NVML_ERROR_NOT_SUPPORTED means the device has no such reading: the series is left out,
the GPU is still up and nothing is reported as an error."""

from __future__ import annotations

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from exporter.nvml import NvmlReader
from exporter.server import make_registry
from harness.fake_nvml import FakeNvml


def series(reader: NvmlReader) -> dict[str, list[dict[str, str]]]:
    text = generate_latest(make_registry(reader)).decode()
    found: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append(sample.labels | {"value": str(sample.value)})
    return found


def gpus_of(found: dict[str, list[dict[str, str]]], name: str) -> list[str]:
    return sorted(labels["gpu"] for labels in found.get(name, []) if "GPU_I_ID" not in labels)


def test_it_omits_ecc_on_a_gpu_without_ecc(fake: FakeNvml, reader: NvmlReader) -> None:
    fake.gpus[2].ecc = None

    found = series(reader)

    assert gpus_of(found, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL") == ["0", "1"]
    assert gpus_of(found, "DCGM_FI_DEV_GPU_TEMP") == ["0", "1", "2"]
    assert {s["gpu"]: s["value"] for s in found["dra_exporter_gpu_up"]}["2"] == "1.0"
    assert all(s["gpu"] == "3" for s in found["dra_exporter_gpu_error"])


def test_it_omits_any_reading_the_driver_does_not_support(
    fake: FakeNvml, reader: NvmlReader
) -> None:
    fake.gpus[1].unsupported = {
        "nvmlDeviceGetPowerUsage",
        "nvmlDeviceGetTotalEnergyConsumption",
        "nvmlDeviceGetComputeRunningProcesses",
        "nvmlDeviceRegisterEvents",
    }

    found = series(reader)

    assert gpus_of(found, "DCGM_FI_DEV_POWER_USAGE") == ["0", "2"]
    assert gpus_of(found, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") == ["0", "2"]
    assert gpus_of(found, "DCGM_FI_DEV_XID_ERRORS") == ["0", "2"]
    assert gpus_of(found, "DCGM_FI_DEV_SM_CLOCK") == ["0", "1", "2"]
    assert "1" not in gpus_of(found, "dra_exporter_process_memory_used_bytes")


def test_a_gpu_in_mig_mode_has_no_utilisation_and_its_mig_devices_only_memory(
    reader: NvmlReader,
) -> None:
    found = series(reader)

    assert gpus_of(found, "DCGM_FI_DEV_GPU_UTIL") == ["1", "2"]
    mig_series = {
        name
        for name, samples in found.items()
        for labels in samples
        if "GPU_I_ID" in labels and name.startswith("DCGM_")
    }
    assert mig_series == {
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_TOTAL",
        "DCGM_FI_DEV_FB_RESERVED",
    }


def test_a_gpu_without_nvlink_or_mig_support_has_neither(
    fake: FakeNvml, reader: NvmlReader
) -> None:
    fake.gpus[1].mig_mode = None

    node = reader.read()

    assert node.gpus[0].nvlinks == ()  # the A100 answers NOT_SUPPORTED on link 0
    assert node.gpus[1].mig_mode is None and node.gpus[1].is_healthy
    assert fake.calls["nvmlDeviceGetNvLinkState"] == 1 + 36 + 36
