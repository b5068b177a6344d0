"""A mirror that knows when its history is no longer the cluster's: restarted API servers
starting at a lower resourceVersion, replaced clusters, resourceVersions the server has not
reached, and the periodic resync across bounded runs."""

from __future__ import annotations

import copy
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from apiemulator import Emulator
from claims.models import ResourceClaim
from harness.fixtures import fixture_objects
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.errors import ResourceVersionTooLarge, Unavailable, Unreachable
from kube.kinds import Kind
from mirror.models import MirrorStatus
from mirror.reflector import Backoff, Reflector
from tests.mirror.conftest import cluster_state, mirror_state

pytestmark = pytest.mark.django_db

VANISHED = "big-memory-gpu"  # a claim the new cluster no longer has


def new_claim() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": "born-while-away",
            "namespace": "gpu-test1",
            "uid": "0e0e0e0e-0000-4000-8000-000000000001",
        },
        "spec": {"devices": {"requests": []}},
    }


def changed_content() -> list[dict[str, Any]]:
    """The fixtures without one claim and with a new one, loaded first so that it gets one of
    the new cluster's lowest resourceVersions."""
    kept = [
        o
        for o in fixture_objects()
        if not (o["kind"] == "ResourceClaim" and o["metadata"]["name"] == VANISHED)
    ]
    return [copy.deepcopy(o) for o in fixture_objects() if o["kind"] == "Namespace"] + [
        new_claim(),
        *kept,
    ]


def claim_versions() -> dict[str, str]:
    return dict(ResourceClaim.objects.values_list("uid", "resource_version"))


def served_versions(emulator: Emulator) -> dict[str, str]:
    return {
        o["metadata"]["uid"]: o["metadata"]["resourceVersion"]
        for o in emulator.objects("ResourceClaim")
    }


def swap_cluster_under_a_running_reflector(
    old: Emulator, make_new: Any, seconds: float = 8.0
) -> tuple[Emulator, Reflector, float]:
    """Mirrors claims from ``old``; once the reflector watches, stops ``old`` and starts
    ``make_new(port)`` in its place. Returns the new emulator, the reflector and how long
    after the new server was ready the mirror equalled it."""
    box: dict[str, Any] = {}

    def swap() -> None:
        deadline = time.monotonic() + 5
        while old.state()["activeWatches"] < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        port = old.port
        old.stop()
        new = make_new(port).start()
        box["expected"] = served_versions(new)
        box["new"], box["ready"] = new, time.monotonic()

    def not_converged() -> bool:
        if "expected" in box and claim_versions() == box["expected"]:
            box["converged"] = time.monotonic()
            return False
        return True

    cluster = Cluster(ClusterConfig(server=old.url, read_timeout=5))
    reflector = Reflector(Kind.RESOURCE_CLAIMS, cluster, watch_seconds=5)
    reflector.relist()
    worker = threading.Thread(target=swap)
    worker.start()
    try:
        reflector.run(seconds=seconds, keepalive=not_converged)
    finally:
        worker.join()
        cluster.close()
    assert "converged" in box, "the mirror never equalled the new cluster"
    return box["new"], reflector, box["converged"] - box["ready"]


def test_a_restart_at_a_lower_resource_version_leaves_no_ghost_and_misses_nothing():
    old = Emulator(port=0, bookmark_interval=0.2, initial_resource_version=5000).start()
    old.load(fixture_objects())
    identity = old.cluster_uid

    def restarted(port: int) -> Emulator:
        new = Emulator(port=port, bookmark_interval=0.2, cluster_uid=identity)
        new.load(changed_content())
        return new

    new, reflector, took = swap_cluster_under_a_running_reflector(old, restarted)
    try:
        assert new.resource_version < 5000  # the history went back
        assert took < 3
        assert not ResourceClaim.objects.filter(name=VANISHED).exists()
        assert ResourceClaim.objects.filter(name="born-while-away").exists()
        with Cluster(ClusterConfig(server=new.url)) as cluster:
            assert mirror_state(Kind.RESOURCE_CLAIMS) == cluster_state(
                cluster, Kind.RESOURCE_CLAIMS
            )
        status = MirrorStatus.objects.get(kind="resourceclaims")
        assert status.resource_version == reflector.resource_version
        assert int(status.resource_version) <= new.resource_version
        assert status.relists_total == 2
        assert status.last_error == ""
    finally:
        new.stop()


def test_a_replaced_cluster_is_relisted_although_its_versions_look_plausible():
    old = Emulator(port=0, bookmark_interval=0.2).start()
    old.load(fixture_objects())
    saved = old.resource_version

    def replacement(port: int) -> Emulator:
        # Its history covers the saved resourceVersion, so a watch from there would replay
        # only its tail: the new claim (early) missed, the vanished one never deleted.
        new = Emulator(port=port, bookmark_interval=0.2, initial_resource_version=50)
        new.load(changed_content())
        return new

    new, _, took = swap_cluster_under_a_running_reflector(old, replacement)
    try:
        assert 50 < int(served_versions(new)["0e0e0e0e-0000-4000-8000-000000000001"]) < saved
        assert new.resource_version > saved
        assert took < 3
        status = MirrorStatus.objects.get(kind="resourceclaims")
        assert status.cluster_uid == new.cluster_uid != old.cluster_uid
        assert status.relists_total == 2
    finally:
        new.stop()


def test_a_resource_version_the_server_has_not_reached_makes_it_relist(cluster, emulator):
    reflector = Reflector(Kind.RESOURCE_CLAIMS, cluster, watch_seconds=5)
    reflector.relist()
    vanished = ResourceClaim.objects.get(name=VANISHED)
    cluster.delete(Kind.RESOURCE_CLAIMS, VANISHED, vanished.namespace)
    cluster.create(Kind.RESOURCE_CLAIMS, new_claim())
    # The saved position is ahead of the server (e.g. a database restored from another
    # cluster's backup): a watch from it would be silent forever.
    future = str(emulator.resource_version + 1000)
    MirrorStatus.objects.filter(kind="resourceclaims").update(resource_version=future)
    restarted = Reflector(Kind.RESOURCE_CLAIMS, cluster, watch_seconds=5)

    started = time.monotonic()
    restarted.run(
        seconds=5,
        keepalive=lambda: MirrorStatus.objects.get(kind="resourceclaims").relists_total < 2,
    )

    assert time.monotonic() - started < 2
    assert mirror_state(Kind.RESOURCE_CLAIMS) == cluster_state(cluster, Kind.RESOURCE_CLAIMS)
    assert int(restarted.resource_version or 0) <= emulator.resource_version


def test_the_periodic_resync_happens_across_bounded_runs(cluster):
    Reflector(Kind.DEVICE_CLASSES, cluster).relist()
    # A fresh reflector (the next bounded run) lists only when the last list is old enough.
    Reflector(Kind.DEVICE_CLASSES, cluster, watch_seconds=1, resync_seconds=60).run(seconds=0.6)
    assert MirrorStatus.objects.get(kind="deviceclasses").relists_total == 1
    MirrorStatus.objects.filter(kind="deviceclasses").update(
        last_list_at=timezone.now() - timedelta(seconds=61)
    )
    Reflector(Kind.DEVICE_CLASSES, cluster, watch_seconds=1, resync_seconds=60).run(seconds=0.6)
    status = MirrorStatus.objects.get(kind="deviceclasses")
    assert status.relists_total == 2
    assert timezone.now() - status.last_list_at < timedelta(seconds=5)


def test_bookmarks_count_as_hearing_from_the_cluster(cluster):
    reflector = Reflector(Kind.DEVICE_CLASSES, cluster, watch_seconds=1)
    reflector.relist()
    long_ago = timezone.now() - timedelta(hours=1)
    MirrorStatus.objects.filter(kind="deviceclasses").update(last_seen_at=long_ago)
    reflector.run(seconds=0.8)  # no changes: only bookmarks (every 0.2 s) arrive
    status = MirrorStatus.objects.get(kind="deviceclasses")
    assert status.events_total == 0
    assert status.last_seen_at > long_ago + timedelta(minutes=59)


def test_backoff_retries_fast_while_the_server_is_unreachable_and_keeps_jitter():
    backoff = Backoff()
    unreachable = [backoff.next_delay(unreachable=True) for _ in range(12)]
    assert unreachable[0] <= 0.5
    assert max(unreachable) <= 5
    assert len(set(unreachable)) > 1
    backoff.reset()
    answered = [backoff.next_delay() for _ in range(12)]
    assert 5 < max(answered) <= 30


def test_the_client_names_a_too_large_resource_version_and_an_unreachable_server(cluster, emulator):
    future = str(emulator.resource_version + 10)
    with pytest.raises(ResourceVersionTooLarge) as caught:
        cluster.list_page(
            Kind.RESOURCE_CLAIMS, resource_version=future, resource_version_match="NotOlderThan"
        )
    assert isinstance(caught.value, Unavailable) and caught.value.code == 504
    port = emulator.port
    emulator.stop()
    config = ClusterConfig(server=f"http://127.0.0.1:{port}", connect_timeout=1)
    with Cluster(config) as gone, pytest.raises(Unreachable):
        gone.identity()
