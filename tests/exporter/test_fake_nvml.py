"""The fake speaks pynvml's numbers: its constants are the real module's."""

from __future__ import annotations

import importlib

from harness.fake_nvml import FakeNvml

CONSTANTS = [
    "NVML_ERROR_UNINITIALIZED",
    "NVML_ERROR_INVALID_ARGUMENT",
    "NVML_ERROR_NOT_SUPPORTED",
    "NVML_ERROR_NOT_FOUND",
    "NVML_ERROR_DRIVER_NOT_LOADED",
    "NVML_ERROR_TIMEOUT",
    "NVML_ERROR_GPU_IS_LOST",
    "NVML_ERROR_FUNCTION_NOT_FOUND",
    "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
    "nvmlMemory_v2",
    "NVML_DEVICE_MIG_ENABLE",
    "NVML_NVLINK_MAX_LINKS",
    "NVML_TEMPERATURE_GPU",
    "NVML_CLOCK_SM",
    "NVML_CLOCK_MEM",
    "NVML_MEMORY_ERROR_TYPE_CORRECTED",
    "NVML_MEMORY_ERROR_TYPE_UNCORRECTED",
    "NVML_VOLATILE_ECC",
    "NVML_AGGREGATE_ECC",
    "nvmlEventTypeXidCriticalError",
]


def test_its_constants_are_pynvml_s() -> None:
    # Read, not called: loading pynvml needs no driver (only nvmlInit does).
    real = importlib.import_module("pynvml")
    assert {name: getattr(FakeNvml, name) for name in CONSTANTS} == {
        name: getattr(real, name) for name in CONSTANTS
    }


def test_every_call_the_exporter_makes_exists_in_pynvml() -> None:
    real = importlib.import_module("pynvml")
    calls = [name for name in vars(FakeNvml) if name.startswith("nvml")]
    assert [name for name in calls if not hasattr(real, name)] == []
