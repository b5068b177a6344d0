"""The emulator with the demo cluster loaded, and clients of it (real kubernetes client, HTTP)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from apiemulator import Emulator
from harness.fixtures import fixture_objects
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.kinds import Kind
from mirror.mapping import normalized
from mirror.reflector import Reflector
from mirror.store import MODELS


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    with Emulator(port=0, bookmark_interval=0.2) as emu:
        emu.load(fixture_objects())
        yield emu


@pytest.fixture
def cluster(emulator: Emulator) -> Iterator[Cluster]:
    with Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client:
        yield client


def cluster_state(cluster: Cluster, kind: Kind) -> dict[str, tuple[str, dict[str, Any]]]:
    """uid → (resourceVersion, object) as the API server lists them."""
    items = []
    continue_ = None
    while True:
        page = cluster.list_page(kind, limit=500, continue_=continue_)
        items += page["items"]
        continue_ = page["metadata"].get("continue")
        if not continue_:
            break
    return {
        o["metadata"]["uid"]: (o["metadata"]["resourceVersion"], normalized(kind, o)) for o in items
    }


def mirror_state(kind: Kind) -> dict[str, tuple[str, dict[str, Any]]]:
    return {
        uid: (version, raw)
        for uid, version, raw in MODELS[kind].objects.values_list("uid", "resource_version", "raw")
    }


def watch_claims(
    cluster: Cluster,
    until: Callable[[], bool],
    *,
    action: Callable[[], object] | None = None,
    seconds: float = 15.0,
) -> None:
    """Runs the claims watcher (the reflector, as the watchers run it) in this thread until
    ``until()`` holds, at most ``seconds``; what follows each committed batch (portal requests
    following their claims, quota alarms) runs here too, as in the embedded mode. ``action``
    runs meanwhile in another thread (cluster calls only: the test database is this thread's).
    Each call starts a new reflector from the saved position, as a restarted watcher does."""
    reflector = Reflector(Kind.RESOURCE_CLAIMS, cluster, watch_seconds=1)
    reflector.backoff.base, reflector.backoff.cap = 0.02, 0.5
    worker = threading.Thread(target=action, daemon=True) if action is not None else None
    if worker is not None:
        worker.start()
    try:
        reflector.run(seconds=seconds, keepalive=lambda: not until())
    finally:
        if worker is not None:
            worker.join(timeout=seconds)
    assert until(), f"not reached within {seconds} s"
