"""The demo cluster (the API emulator with ``devices/fixtures``) and the simulated scheduler."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from apiemulator import Emulator
from demo.scheduler import Scheduler
from kube.client import Cluster
from kube.config import ClusterConfig

FIXTURES = Path(__file__).resolve().parents[2] / "devices" / "fixtures"


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    with Emulator(port=0, bookmark_interval=0.2) as emu:
        emu.load(
            item
            for path in sorted(FIXTURES.glob("*.json"))
            for item in json.loads(path.read_text())["items"]
        )
        yield emu


@pytest.fixture
def cluster(emulator: Emulator) -> Iterator[Cluster]:
    with Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client:
        yield client


@pytest.fixture
def scheduler(cluster: Cluster) -> Scheduler:
    return Scheduler(cluster, tick_seconds=1)
