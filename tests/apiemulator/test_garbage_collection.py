"""The emulator's garbage collector deletes objects whose owners are gone, as
kube-controller-manager's does (background propagation), and keeps the fixtures whole."""

from __future__ import annotations

import time
from pathlib import Path

from apiemulator import Emulator
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.errors import NotFound
from kube.kinds import Kind


def pod(name: str) -> dict:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


def claim_owned_by(name: str, *owners: dict, finalizers: tuple[str, ...] = ()) -> dict:
    metadata: dict = {"name": name, "namespace": "default", "ownerReferences": list(owners)}
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return {
        "metadata": metadata,
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "x"}}]}},
    }


def owner(obj: dict, kind: str = "Pod") -> dict:
    return {
        "apiVersion": "v1",
        "kind": kind,
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
    }


def test_a_claim_goes_within_seconds_of_its_pod() -> None:
    with (
        Emulator(port=0, garbage_collection_interval=0.05) as emulator,
        Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client,
    ):
        owner_pod = client.create(Kind.PODS, pod("p"))
        client.create(Kind.RESOURCE_CLAIMS, claim_owned_by("c", owner(owner_pod)))
        time.sleep(0.2)
        assert client.get(Kind.RESOURCE_CLAIMS, "c", "default")

        client.delete(Kind.PODS, "p", "default")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                client.get(Kind.RESOURCE_CLAIMS, "c", "default")
            except NotFound:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the claim outlived its pod by 5 s")


def _gone(client: Cluster, kind: Kind, name: str, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            client.get(kind, name, "default")
        except NotFound:
            return True
        time.sleep(0.05)
    return False


def test_the_background_collector_follows_a_chain_and_rests_when_nothing_changes() -> None:
    """A pass's own deletions may orphan more (pod → claim → claim owned by that claim): the
    next pass still runs. With nothing written since a pass began, later passes are skipped
    (each reads every object under the store's lock)."""
    with (
        Emulator(port=0, garbage_collection_interval=0.05) as emulator,
        Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client,
    ):
        owner_pod = client.create(Kind.PODS, pod("p"))
        first = client.create(Kind.RESOURCE_CLAIMS, claim_owned_by("c1", owner(owner_pod)))
        owned = owner(first, kind="ResourceClaim")
        owned["apiVersion"] = "resource.k8s.io/v1"
        client.create(Kind.RESOURCE_CLAIMS, claim_owned_by("c2", owned))
        client.delete(Kind.PODS, "p", "default")
        assert _gone(client, Kind.RESOURCE_CLAIMS, "c1")
        assert _gone(client, Kind.RESOURCE_CLAIMS, "c2")

        passes: list[int] = []
        real = emulator.store.collect_garbage

        def counting() -> list[tuple[str, str, str]]:
            passes.append(1)
            return real()

        emulator.store.collect_garbage = counting  # type: ignore[method-assign]
        time.sleep(0.5)  # ten intervals, nothing written
        assert len(passes) <= 1
        client.create(Kind.PODS, pod("q"))
        deadline = time.monotonic() + 5
        while not passes and time.monotonic() < deadline:
            time.sleep(0.02)
        settled = len(passes)
        assert settled >= 1
        time.sleep(0.5)
        assert len(passes) <= settled + 1


def test_an_owner_recreated_under_the_same_name_does_not_adopt_the_old_dependents(
    emulator: Emulator, cluster: Cluster
) -> None:
    first = cluster.create(Kind.PODS, pod("p"))
    cluster.create(Kind.RESOURCE_CLAIMS, claim_owned_by("c", owner(first)))
    cluster.delete(Kind.PODS, "p", "default")
    cluster.create(Kind.PODS, pod("p"))

    assert emulator.collect_garbage() == [("ResourceClaim", "default", "c")]


def test_one_remaining_owner_keeps_an_object(emulator: Emulator, cluster: Cluster) -> None:
    kept, gone = cluster.create(Kind.PODS, pod("kept")), cluster.create(Kind.PODS, pod("gone"))
    cluster.create(Kind.RESOURCE_CLAIMS, claim_owned_by("c", owner(kept), owner(gone)))
    cluster.delete(Kind.PODS, "gone", "default")

    assert emulator.collect_garbage() == []
    assert cluster.get(Kind.RESOURCE_CLAIMS, "c", "default")


def test_owners_of_kinds_it_does_not_serve_count_as_present(
    emulator: Emulator, cluster: Cluster
) -> None:
    replica_set = {"metadata": {"name": "rs", "uid": "0b5c9f9e-0000-4000-8000-000000000001"}}
    cluster.create(Kind.RESOURCE_CLAIMS, claim_owned_by("c", owner(replica_set, "ReplicaSet")))

    assert emulator.collect_garbage() == []


def test_a_dependent_with_finalizers_is_only_marked_for_deletion(
    emulator: Emulator, cluster: Cluster
) -> None:
    owner_pod = cluster.create(Kind.PODS, pod("p"))
    cluster.create(
        Kind.RESOURCE_CLAIMS,
        claim_owned_by("c", owner(owner_pod), finalizers=("example.com/keep",)),
    )
    cluster.delete(Kind.PODS, "p", "default")

    emulator.collect_garbage()

    assert cluster.get(Kind.RESOURCE_CLAIMS, "c", "default")["metadata"]["deletionTimestamp"]


def test_the_fixtures_keep_every_object_a_real_collector_would_keep(
    emulator: Emulator, cluster: Cluster, fixtures_dir: Path
) -> None:
    emulator.load_files(fixtures_dir)

    assert emulator.collect_garbage() == []
    slices, _ = cluster.list_all(Kind.RESOURCE_SLICES)
    assert len(slices) == 15
