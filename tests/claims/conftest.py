"""A live demo cluster for the claim lifecycle: the emulator loaded with the project's fixtures,
the portal pointed at it, and the mirror filled from it (``resync`` again after changes)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from apiemulator import Emulator
from claims.index import reset_index
from mirror.cluster import Cluster, ClusterConfig, Kind
from mirror.kinds import KINDS
from mirror.mapping import MIRRORED_KINDS
from mirror.store import delete_missing, load
from tests.mirror.conftest import fixture_objects


def _resync(cluster: Cluster) -> None:
    """Mirror everything the API server holds now (what the watchers would converge to)."""
    objects: list[dict[str, Any]] = []
    seen: dict[Kind, set[str]] = {}
    for kind in MIRRORED_KINDS:
        listed, _ = cluster.list_all(kind)
        seen[kind] = {item["metadata"]["uid"] for item in listed}
        objects.extend({**item, "kind": KINDS[kind].kind} for item in listed)
    load(objects)
    for kind, uids in seen.items():
        delete_missing(kind, uids)


@pytest.fixture
def live(db: None, settings: Any) -> Iterator[tuple[Emulator, Cluster, Callable[[], None]]]:
    with Emulator(port=0, bookmark_interval=0.2) as emulator:
        emulator.load(fixture_objects())
        settings.KUBE_API_SERVER = emulator.url
        settings.KUBECONFIG = ""
        reset_index()
        with Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as cluster:
            _resync(cluster)
            yield emulator, cluster, lambda: _resync(cluster)
        reset_index()
