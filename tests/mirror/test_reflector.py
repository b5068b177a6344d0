"""The list+watch loop against the emulator, through the real kubernetes client over HTTP."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from apiemulator import Emulator
from devices.models import Device, ResourceSlice
from harness.fixtures import fixture_objects
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.kinds import Kind
from mirror import reflector as reflector_module
from mirror import store
from mirror.models import MirrorStatus
from mirror.reflector import Reflector
from tests.mirror.conftest import cluster_state, mirror_state


def run_while(reflector: Reflector, action, seconds: float = 3.0) -> None:
    """Runs the reflector in this thread while ``action`` runs in another."""
    worker = threading.Thread(target=action)
    worker.start()
    reflector.run(seconds=seconds)
    worker.join()


def first_slice(cluster) -> dict:
    return cluster.list_page(Kind.RESOURCE_SLICES, limit=1)["items"][0]


@pytest.mark.django_db
def test_a_cold_start_mirrors_every_object_exactly(cluster):
    for kind in store.MODELS:
        Reflector(kind, cluster).relist()
        assert mirror_state(kind) == cluster_state(cluster, kind), kind
    assert Device.objects.count() == 238


@pytest.mark.django_db
def test_a_resync_with_no_changes_writes_nothing(cluster):
    reflector = Reflector(Kind.RESOURCE_SLICES, cluster)
    reflector.relist()
    applied = reflector.relist()
    assert (applied.written, applied.deleted) == (0, 0)


@pytest.mark.django_db
def test_watch_events_reach_the_rows(cluster):
    reflector = Reflector(Kind.RESOURCE_SLICES, cluster, watch_seconds=1)
    reflector.relist()
    victim = first_slice(cluster)

    def change() -> None:
        time.sleep(0.3)
        victim["metadata"]["labels"] = {"edited": "yes"}
        cluster.replace(Kind.RESOURCE_SLICES, victim)
        cluster.delete(Kind.RESOURCE_SLICES, victim["metadata"]["name"])

    run_while(reflector, change, seconds=2)
    assert mirror_state(Kind.RESOURCE_SLICES) == cluster_state(cluster, Kind.RESOURCE_SLICES)
    assert not ResourceSlice.objects.filter(name=victim["metadata"]["name"]).exists()
    status = MirrorStatus.objects.get(kind="resourceslices")
    assert status.events_total == 2
    assert status.lag_seconds is not None and status.lag_seconds < 1


@pytest.mark.django_db
def test_a_compaction_makes_it_relist_and_reconcile_deletes(cluster, emulator):
    reflector = Reflector(Kind.RESOURCE_SLICES, cluster, watch_seconds=1)
    reflector.relist()
    victim = first_slice(cluster)
    # Changes the watcher never sees as events: history is compacted before it watches.
    cluster.delete(Kind.RESOURCE_SLICES, victim["metadata"]["name"])
    emulator.compact()
    reflector.run(seconds=1.5)
    assert mirror_state(Kind.RESOURCE_SLICES) == cluster_state(cluster, Kind.RESOURCE_SLICES)
    assert MirrorStatus.objects.get(kind="resourceslices").relists_total == 2


@pytest.mark.django_db
def test_an_api_server_restart_mid_watch_costs_one_relist_and_loses_nothing(cluster, emulator):
    reflector = Reflector(Kind.RESOURCE_SLICES, cluster, watch_seconds=5)
    reflector.backoff.base = 0.01
    victim = first_slice(cluster)

    def restart() -> None:
        time.sleep(0.4)  # the reflector is watching
        cluster.delete(Kind.RESOURCE_SLICES, victim["metadata"]["name"])
        emulator.restart()  # the delete is history the new watch cache does not have

    run_while(reflector, restart, seconds=2.5)
    assert mirror_state(Kind.RESOURCE_SLICES) == cluster_state(cluster, Kind.RESOURCE_SLICES)
    assert not ResourceSlice.objects.filter(uid=victim["metadata"]["uid"]).exists()


@pytest.mark.django_db
def test_it_survives_500s_and_dropped_connections(cluster, emulator):
    reflector = Reflector(Kind.RESOURCE_SLICES, cluster, watch_seconds=1)
    reflector.backoff.base = 0.01
    victim = first_slice(cluster)
    emulator.fail_next(2, status=500, path="/apis/resource.k8s.io/v1/resourceslices")

    def change() -> None:
        time.sleep(0.4)
        emulator.close_watches()
        victim["metadata"]["labels"] = {"after": "drop"}
        cluster.replace(Kind.RESOURCE_SLICES, victim)

    run_while(reflector, change, seconds=2.5)
    assert mirror_state(Kind.RESOURCE_SLICES) == cluster_state(cluster, Kind.RESOURCE_SLICES)
    status = MirrorStatus.objects.get(kind="resourceslices")
    assert status.error_count >= 2 and status.last_error_at is not None
    assert status.last_error == ""  # recovered: the error is history, not the present


@pytest.mark.django_db
def test_a_watcher_killed_mid_batch_resumes_without_loss_or_duplication(cluster, monkeypatch):
    reflector = Reflector(Kind.RESOURCE_SLICES, cluster, watch_seconds=1)
    reflector.relist()
    names = [s["metadata"]["name"] for s in cluster.list_page(Kind.RESOURCE_SLICES)["items"]]
    for name in names[:5]:
        cluster.delete(Kind.RESOURCE_SLICES, name)

    real_apply = store.apply_events
    calls = {"n": 0}

    def dying_apply(kind, events):
        real_apply(kind, events)  # rows written, then the process "dies" before commit
        calls["n"] += 1
        raise SystemExit("killed mid-batch")

    monkeypatch.setattr("mirror.reflector.apply_events", dying_apply)
    with pytest.raises(SystemExit):
        reflector.run(seconds=2)
    assert calls["n"] == 1
    # The batch rolled back with its resourceVersion: the mirror is still at the list.
    assert ResourceSlice.objects.count() == 15
    monkeypatch.setattr("mirror.reflector.apply_events", real_apply)

    restarted = Reflector(Kind.RESOURCE_SLICES, cluster, watch_seconds=1)
    assert restarted.resource_version == reflector.resource_version
    restarted.run(seconds=1.5)
    assert mirror_state(Kind.RESOURCE_SLICES) == cluster_state(cluster, Kind.RESOURCE_SLICES)
    assert MirrorStatus.objects.get(kind="resourceslices").relists_total == 1  # no relist


@pytest.mark.django_db
def test_a_malformed_object_is_flagged_and_the_watcher_goes_on(cluster, emulator):
    reflector = Reflector(Kind.RESOURCE_SLICES, cluster, watch_seconds=1)
    reflector.relist()

    def publish() -> None:
        time.sleep(0.3)
        emulator.load(
            [
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": "broken"},
                    "spec": {"devices": {"no": "list"}},
                }
            ]
        )
        good = first_slice(cluster)
        good["metadata"]["labels"] = {"still": "watching"}
        cluster.replace(Kind.RESOURCE_SLICES, good)

    run_while(reflector, publish, seconds=2)
    broken = ResourceSlice.objects.get(name="broken")
    assert broken.is_malformed
    assert ResourceSlice.objects.filter(raw__metadata__labels__still="watching").exists()


@pytest.mark.django_db
def test_device_class_memberships_follow_the_slices(cluster, django_capture_on_commit_callbacks):
    from devices.models import DeviceClassMatch

    with django_capture_on_commit_callbacks(execute=True):
        Reflector(Kind.DEVICE_CLASSES, cluster).relist()
        Reflector(Kind.RESOURCE_SLICES, cluster).relist()
    matches = DeviceClassMatch.objects.filter(device_class_name="mig.nvidia.com")
    assert matches.count() == 200
    assert not matches.exclude(device__device_type="mig").exists()


@pytest.mark.django_db
def test_a_relist_leaves_every_device_state_as_the_allocator_sees_it(cluster, monkeypatch):
    from mirror.states import STATE_KINDS, refresh_all_states

    # As in a process that has already checked every pool once: only the pools the pages
    # touched are recomputed, at the end of each relist.
    monkeypatch.setattr(reflector_module, "_STATES_CHECKED", set(STATE_KINDS))
    for kind in (Kind.RESOURCE_SLICES, Kind.RESOURCE_CLAIMS):
        Reflector(kind, cluster).relist()
    assert refresh_all_states() == 0  # the relists' deferred refresh left nothing stale
    assert Device.objects.filter(node_name="dgx-a100-01", name="gpu-0").get().state == "blocked"


@pytest.mark.django_db
def test_a_processes_first_relist_heals_states_a_dead_process_left_behind(cluster, monkeypatch):
    for kind in (Kind.RESOURCE_SLICES, Kind.RESOURCE_CLAIMS):
        Reflector(kind, cluster).relist()
    # A process that died between a page's commit and the relist's end left a wrong state.
    Device.objects.filter(name="gpu-0", node_name="dgx-a100-01").update(state="free")
    monkeypatch.setattr(reflector_module, "_STATES_CHECKED", set())
    applied = Reflector(Kind.RESOURCE_CLAIMS, cluster).relist()
    assert applied.written == 0  # nothing changed in the cluster...
    # ...but a new process recomputes every pool once.
    assert Device.objects.get(name="gpu-0", node_name="dgx-a100-01").state == "blocked"


class CountingCluster(Cluster):
    """The real client, counting the list pages it asks for (metadata-only or whole)."""

    pages: list[tuple[bool, str | None]]

    def list_page(self, kind: Kind, **kwargs: Any) -> dict[str, Any]:
        self.pages.append((bool(kwargs.get("metadata_only")), kwargs.get("continue_")))
        return super().list_page(kind, **kwargs)


@pytest.fixture
def counting(emulator: Emulator) -> Iterator[CountingCluster]:
    with CountingCluster(ClusterConfig(server=emulator.url, read_timeout=5)) as counting:
        counting.pages = []
        yield counting


@pytest.mark.django_db
def test_a_resync_compares_metadata_and_lists_whole_only_the_pages_that_changed(counting):
    slices = counting.list_all(Kind.RESOURCE_SLICES)[0]
    assert len(slices) >= 9
    reflector = Reflector(Kind.RESOURCE_SLICES, counting, page_size=3)
    reflector.relist()  # cold: nothing to compare against, every page whole
    assert counting.pages and not any(metadata for metadata, _ in counting.pages)

    counting.pages.clear()
    assert reflector.relist().written == 0
    assert counting.pages and all(metadata for metadata, _ in counting.pages)

    # Changes the watcher never saw: one in the first page, one deleted further on.
    first, gone = slices[0], slices[-1]
    first["metadata"]["labels"] = {"edited": "while-away"}
    counting.replace(Kind.RESOURCE_SLICES, first)
    counting.delete(Kind.RESOURCE_SLICES, gone["metadata"]["name"])
    counting.pages.clear()
    applied = reflector.relist()
    assert (applied.written, applied.deleted) == (1, 1)
    whole = [continue_ for metadata, continue_ in counting.pages if not metadata]
    assert whole == [None]  # the first page again, at the list's snapshot; no other
    assert mirror_state(Kind.RESOURCE_SLICES) == cluster_state(counting, Kind.RESOURCE_SLICES)
    assert ResourceSlice.objects.get(uid=first["metadata"]["uid"]).raw["metadata"]["labels"] == {
        "edited": "while-away"
    }


@pytest.mark.django_db
def test_a_resync_reads_a_changed_page_further_on_at_the_same_snapshot(counting):
    slices = counting.list_all(Kind.RESOURCE_SLICES)[0]
    reflector = Reflector(Kind.RESOURCE_SLICES, counting, page_size=2)
    reflector.relist()
    victim = slices[5]  # the third page
    victim["metadata"]["annotations"] = {"changed": "yes"}
    counting.replace(Kind.RESOURCE_SLICES, victim)
    counting.pages.clear()
    assert reflector.relist().written == 1
    whole = [continue_ for metadata, continue_ in counting.pages if not metadata]
    assert len(whole) == 1 and whole[0]  # the third page, by its continue token
    assert mirror_state(Kind.RESOURCE_SLICES) == cluster_state(counting, Kind.RESOURCE_SLICES)


class BatchRecorder(Reflector):
    """Records the size of each batch it commits."""

    sizes: list[int]
    sent: int

    def _commit(self, batch: list[dict[str, Any]], first_received: float | None) -> None:
        self.sizes.append(len(batch))
        super()._commit(batch, first_received)


@pytest.fixture
def quiet_cluster() -> Iterator[Cluster]:
    """An emulator that sends no bookmarks (a bookmark also ends a batch)."""
    with Emulator(port=0) as emulator:
        emulator.load(fixture_objects())
        with Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client:
            yield client


@pytest.mark.django_db(transaction=True)
def test_a_stream_that_never_pauses_is_still_committed_every_max_delay(quiet_cluster):
    cluster = quiet_cluster
    reflector = BatchRecorder(Kind.RESOURCE_SLICES, cluster, watch_seconds=3, max_delay=0.2)
    reflector.sizes, reflector.sent = [], 0
    reflector.relist()
    victim = first_slice(cluster)

    def trickle() -> None:  # updates back to back for about a second: no 50 ms pause
        time.sleep(0.3)
        started = time.monotonic()
        while time.monotonic() - started < 1.0:
            reflector.sent += 1
            victim["metadata"]["labels"] = {"n": str(reflector.sent)}
            victim["metadata"]["resourceVersion"] = cluster.replace(Kind.RESOURCE_SLICES, victim)[
                "metadata"
            ]["resourceVersion"]

    run_while(reflector, trickle, seconds=2.5)
    assert sum(reflector.sizes) == reflector.sent
    assert len(reflector.sizes) >= 3  # not one batch at the end of the stream
    assert ResourceSlice.objects.get(uid=victim["metadata"]["uid"]).raw["metadata"]["labels"] == {
        "n": str(reflector.sent)
    }
