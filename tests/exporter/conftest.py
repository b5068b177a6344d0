"""The exporter's tests run against the fake pynvml in ``fake_nvml.py``: no GPU, no Django."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from exporter.nvml import NvmlReader
from exporter.server import ExporterServer
from harness.fake_nvml import FakeNvml, mixed_node

HOSTNAME = "gpu-node-01"
PROC_ROOT = Path(__file__).resolve().parent / "proc"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fake() -> FakeNvml:
    return mixed_node()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def reader(fake: FakeNvml, clock: FakeClock) -> NvmlReader:
    return NvmlReader(
        hostname=HOSTNAME, library=fake, proc_root=PROC_ROOT, slow_call_ttl=300, clock=clock
    )


@pytest.fixture
def serve() -> Iterator[Callable[[NvmlReader], str]]:
    """``serve(reader)`` starts the exporter on a free loopback port and returns its URL."""
    servers: list[ExporterServer] = []

    def start(reader: NvmlReader) -> str:
        server = ExporterServer(("127.0.0.1", 0), reader)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
