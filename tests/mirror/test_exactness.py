"""After 1,000 random creates/updates/deletes with faults injected, the mirror equals the cluster.

Three reflectors (slices, classes, claims) run in threads as they would in workers, while a
seeded sequence of operations goes to the emulator over HTTP, interleaved with dropped watch
connections, 500s on watch requests and one compaction (so at least one watcher gets 410 and
relists). Afterwards every mirrored row has the cluster's uid, resourceVersion and raw JSON,
and nothing else is left.
"""

from __future__ import annotations

import copy
import random
import threading
import time

import pytest
from django.db import connection

from harness.fixtures import fixture_objects
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.errors import Conflict, NotFound, Unavailable
from kube.kinds import Kind
from mirror.models import MirrorStatus
from mirror.reflector import Reflector
from mirror.states import refresh_all_states
from tests.mirror.conftest import cluster_state, mirror_state

KINDS = [Kind.RESOURCE_SLICES, Kind.DEVICE_CLASSES, Kind.RESOURCE_CLAIMS]
OPERATIONS = 1000


@pytest.fixture
def postgres_threads(transactional_db):
    if connection.vendor != "postgresql":
        from tests.unavailable import unavailable

        unavailable("PostgreSQL is not configured (set DATABASE_URL=postgres://...)")


def templates() -> dict[Kind, dict]:
    objects = fixture_objects()

    def first(kind: str) -> dict:
        obj = copy.deepcopy(next(o for o in objects if o["kind"] == kind))
        obj["metadata"] = {
            k: v
            for k, v in obj["metadata"].items()
            if k in ("name", "namespace", "labels", "annotations")
        }
        obj.pop("status", None)
        return obj

    return {
        Kind.RESOURCE_SLICES: first("ResourceSlice"),
        Kind.DEVICE_CLASSES: first("DeviceClass"),
        Kind.RESOURCE_CLAIMS: first("ResourceClaim"),
    }


def retrying(action) -> None:
    for _ in range(20):
        try:
            action()
            return
        except (Unavailable, Conflict):
            time.sleep(0.01)
        except NotFound:
            return


LIST_OR_WATCH = r"/(resourceslices|deviceclasses|resourceclaims)$"


def read_state(cluster: Cluster, kind: Kind) -> dict:
    for _ in range(20):
        try:
            return cluster_state(cluster, kind)
        except Unavailable:
            time.sleep(0.01)
    raise AssertionError("the emulator kept failing")


def operate(cluster: Cluster, emulator, seed: int) -> None:
    rng = random.Random(seed)
    shapes = templates()
    for step in range(OPERATIONS):
        kind = rng.choice(KINDS)
        existing = read_state(cluster, kind)
        op = rng.choices(["create", "update", "delete"], weights=[4, 4, 2])[0]
        if op == "create" or not existing:
            body = copy.deepcopy(shapes[kind])
            body["metadata"]["name"] = f"random-{step}"
            retrying(lambda body=body, kind=kind: cluster.create(kind, body))
        elif op == "update":
            uid = rng.choice(sorted(existing))
            obj = copy.deepcopy(existing[uid][1])
            obj["metadata"].setdefault("labels", {})["step"] = str(step)
            spec = obj.setdefault("spec", {})
            if kind == Kind.DEVICE_CLASSES:  # a spec change the server keeps (opaque config)
                opaque = {"driver": "random.example.com", "parameters": {"step": step}}
                spec["config"] = [{"opaque": opaque}]
            elif kind == Kind.RESOURCE_SLICES:
                spec.setdefault("pool", {})["generation"] = step
            # a claim's spec is immutable: its labels change only
            retrying(lambda obj=obj, kind=kind: cluster.replace(kind, obj))
        else:
            uid = rng.choice(sorted(existing))
            meta = existing[uid][1]["metadata"]
            retrying(
                lambda meta=meta, kind=kind: cluster.delete(
                    kind, meta["name"], namespace=meta.get("namespace")
                )
            )
        if step % 97 == 13:
            emulator.close_watches()
        if step % 151 == 7:
            emulator.fail_next(1, status=500, path=LIST_OR_WATCH, method="GET")
        if step % 173 == 11:
            emulator.drop_next(1, path=LIST_OR_WATCH, method="GET")
        if step == OPERATIONS // 2:
            emulator.compact()


@pytest.mark.slow
def test_the_mirror_equals_the_cluster_after_random_changes_and_faults(postgres_threads, emulator):
    stop = threading.Event()
    errors: list[BaseException] = []

    def watch(kind: Kind) -> None:
        try:
            with Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client:
                reflector = Reflector(kind, client, watch_seconds=2, max_batch=200)
                reflector.backoff.base, reflector.backoff.cap = 0.02, 0.5
                reflector.run(seconds=300, stop=stop)
        except BaseException as error:  # surfaced by the test below
            errors.append(error)
        finally:
            connection.close()

    watchers = [threading.Thread(target=watch, args=(kind,)) for kind in KINDS]
    for thread in watchers:
        thread.start()
    try:
        with Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as cluster:
            operate(cluster, emulator, seed=20261121)
            emulator.clear_faults()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if all(mirror_state(k) == cluster_state(cluster, k) for k in KINDS):
                    break
                time.sleep(0.5)
            for kind in KINDS:
                assert mirror_state(kind) == cluster_state(cluster, kind), kind
            # The derived state columns agree with the mirrored slices and claims everywhere:
            # recomputing every pool from scratch changes nothing.
            assert refresh_all_states() == 0
    finally:
        stop.set()
        for thread in watchers:
            thread.join(timeout=30)
    assert not errors
    statuses = {s.kind: s for s in MirrorStatus.objects.all()}
    assert sum(s.relists_total for s in statuses.values()) > len(KINDS)  # the 410 relisted
    assert sum(s.error_count for s in statuses.values()) > 0  # faults were seen and survived
