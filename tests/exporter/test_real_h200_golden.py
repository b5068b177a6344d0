"""The exporter against a real GPU's capture (``golden/h200-driver-580/``, its README).

A fake NVML replays what the H200 answered at each captured moment; the exporter's output must
keep the captured metric names, labels and HELP/TYPE lines (what dashboards and the portal's
ingest read), give the captured readings, and count framebuffer memory as nvidia-smi and
dcgm-exporter do: used without the driver's reserve, the reserve as ``DCGM_FI_DEV_FB_RESERVED``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.nvml import NvmlReader
from harness.fake_nvml import h200_capture
from tests.exporter.conftest import PROC_ROOT
from tests.exporter.loopback import get

CAPTURE = Path(__file__).resolve().parent / "golden" / "h200-driver-580"
NVIDIA_SMI = json.loads((CAPTURE / "nvidia-smi.json").read_text())
MOMENTS = ["idle", "load", "after"]
RESERVED = "DCGM_FI_DEV_FB_RESERVED"

Serve = Callable[[NvmlReader], str]
Sample = tuple[str, tuple[tuple[str, str], ...]]


def scrape(moment: str, serve: Serve, path: str, *, memory_v2: bool = True) -> str:
    reader = NvmlReader(
        hostname="h200-node-1",
        library=h200_capture(moment, memory_v2=memory_v2),
        proc_root=PROC_ROOT,
    )
    status, _, body = get(f"{serve(reader)}{path}")
    assert status == 200
    return body


def samples(text: str) -> dict[Sample, float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def header_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("# HELP ", "# TYPE "))]


@pytest.mark.parametrize("moment", MOMENTS)
def test_it_keeps_the_captured_names_labels_and_help_and_type_lines(
    moment: str, serve: Serve
) -> None:
    captured = (CAPTURE / f"metrics-{moment}.txt").read_text()

    served = scrape(moment, serve, "/metrics")

    added = [line for line in header_lines(served) if line not in header_lines(captured)]
    assert [line for line in header_lines(captured) if line not in header_lines(served)] == []
    assert added == [
        f"# HELP {RESERVED} Framebuffer memory reserved (in MiB).",
        f"# TYPE {RESERVED} gauge",
    ]
    gpu_labels = {labels for name, labels in samples(captured) if name == "DCGM_FI_DEV_FB_USED"}
    assert set(samples(served)) == set(samples(captured)) | {
        (RESERVED, labels) for labels in gpu_labels
    }


@pytest.mark.parametrize("moment", MOMENTS)
def test_its_readings_are_the_captured_ones_with_memory_used_as_nvidia_smi_counts_it(
    moment: str, serve: Serve
) -> None:
    captured = samples((CAPTURE / f"metrics-{moment}.txt").read_text())

    served = samples(scrape(moment, serve, "/metrics"))

    memory = {
        name: value for (name, _), value in served.items() if name.startswith("DCGM_FI_DEV_FB")
    }
    expected_used = NVIDIA_SMI[moment]["memory.used"] if moment in NVIDIA_SMI else 0
    assert memory["DCGM_FI_DEV_FB_USED"] == expected_used
    assert memory[RESERVED] == 614
    assert memory["DCGM_FI_DEV_FB_TOTAL"] == 143771
    # Each figure is floored from bytes on its own, so the three add up to within 2 MiB.
    assert (
        0
        <= 143771
        - (memory["DCGM_FI_DEV_FB_USED"] + memory[RESERVED] + memory["DCGM_FI_DEV_FB_FREE"])
        <= 2
    )
    different = {
        key[0] for key, value in served.items() if key in captured and captured[key] != value
    }
    assert different == {"DCGM_FI_DEV_FB_USED"}  # every other reading is the captured one


@pytest.mark.parametrize("moment", ["idle", "load"])
def test_its_devices_are_the_captured_ones(moment: str, serve: Serve) -> None:
    served = json.loads(scrape(moment, serve, "/devices"))

    assert served == json.loads((CAPTURE / f"devices-{moment}.json").read_text())


@pytest.mark.parametrize("moment", MOMENTS)
def test_a_driver_without_memory_info_v2_gives_the_captured_v1_output(
    moment: str, serve: Serve
) -> None:
    # The capture was served through version 1: with it, the output is the capture itself.
    served = scrape(moment, serve, "/metrics", memory_v2=False)

    assert served == (CAPTURE / f"metrics-{moment}.txt").read_text()
