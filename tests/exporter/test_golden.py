"""``/metrics`` and ``/devices`` for the mixed fake node, compared with files in ``golden/``.

The node: an A100 in MIG mode with two GPU instances, an NVLink pair of H100 NVL (one with an
XID 31 pending and two processes, one in a pod), and a GPU that NVML reports lost.
Regenerate after an intended change with
``UPDATE_GOLDEN=1 .venv/bin/pytest tests/exporter/test_golden.py`` and review the diff.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from exporter.nvml import NvmlReader
from harness.fake_nvml import FakeNvml
from tests.exporter.loopback import get

GOLDEN = Path(__file__).resolve().parent / "golden"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
        pytest.skip(f"rewrote {path.name}")
    assert text == path.read_text(encoding="utf-8")


@pytest.fixture
def url(fake: FakeNvml, reader: NvmlReader, serve: Callable[[NvmlReader], str]) -> str:
    fake.pending_xids.append((2, 31))
    return serve(reader)


def test_metrics_match_the_golden_file(url: str) -> None:
    status, content_type, body = get(f"{url}/metrics")
    assert status == 200
    assert content_type.startswith("text/plain; version=")
    check_golden("metrics.txt", body)


def test_devices_match_the_golden_file(url: str) -> None:
    status, content_type, body = get(f"{url}/devices")
    assert status == 200
    assert content_type == "application/json"
    check_golden("devices.json", body)
