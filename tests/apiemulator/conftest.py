"""An emulator per test, and a `kube.client.Cluster` talking to it over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from apiemulator import Emulator
from kube.client import Cluster
from kube.config import ClusterConfig

FIXTURES = Path(__file__).resolve().parents[2] / "devices" / "fixtures"


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    with Emulator(port=0, bookmark_interval=0.2) as emu:
        yield emu


@pytest.fixture
def cluster(emulator: Emulator) -> Iterator[Cluster]:
    with Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client:
        yield client


@pytest.fixture
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip(f"fixtures not found at {FIXTURES}")
    return FIXTURES
