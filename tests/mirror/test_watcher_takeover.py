"""Two watcher replicas (``manage.py watch``) as real processes, on PostgreSQL, a Redis of their
own and the API emulator: the one that holds the kinds is killed (SIGKILL, as an OOM kill or a
lost node), and the other takes every kind over within 15 s and ends with the mirror exact,
changes made meanwhile included; a replica stopped cleanly (SIGTERM, a rollout) hands its
kinds over at once. About 30 s: marked slow.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import pytest
import redis

from apiemulator import Emulator
from harness.fixtures import fixture_objects
from harness.stack import Stack, fetch, free_port, missing_redis_server, on_loopback, wait_for
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.kinds import Kind
from mirror.mapping import MIRRORED_KINDS
from mirror.models import MirrorStatus
from mirror.store import MODELS
from tests.unavailable import unavailable

pytestmark = pytest.mark.slow

TAKEOVER_SECONDS = 15
# Shorter than the default 10 s, so the test is quick; the benchmark measures the default.
LOCK_TTL = 5


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[tuple[Stack, Emulator]]:
    if reason := missing_redis_server():
        unavailable(reason)
    var = tmp_path_factory.mktemp("takeover")
    with on_loopback(
        var, fixture_objects(), WATCHER_LOCK_TTL=str(LOCK_TTL), WATCH_REQUEST_SECONDS="5"
    ) as (stack, emulator):
        stack.manage("migrate", "--no-input")
        yield stack, emulator


def holders(stack: Stack) -> dict[str, str | None]:
    """Which lock holder (a uuid) has each kind; None where nobody does."""
    client = redis.Redis.from_url(stack.redis_url)
    prefix = stack.env["WATCHER_LOCK_PREFIX"]
    return {
        kind.value: (value.decode() if (value := client.get(f"{prefix}{kind.value}")) else None)
        for kind in MIRRORED_KINDS
    }


def mirror_versions(stack: Stack, kind: Kind) -> dict[str, str]:
    table = MODELS[kind]._meta.db_table  # a model's table name, not input
    return dict(stack.query(f'SELECT uid, resource_version FROM "{table}"'))  # noqa: S608


def cluster_versions(emulator: Emulator, kind: Kind) -> dict[str, str]:
    versions = {}
    with Cluster(ClusterConfig(server=emulator.url)) as cluster:
        continue_ = None
        while True:
            page = cluster.list_page(kind, limit=500, continue_=continue_)
            for item in page["items"]:
                versions[item["metadata"]["uid"]] = item["metadata"]["resourceVersion"]
            continue_ = page["metadata"].get("continue")
            if not continue_:
                return versions


def exact(stack: Stack, emulator: Emulator) -> bool:
    return all(
        mirror_versions(stack, kind) == cluster_versions(emulator, kind) for kind in MIRRORED_KINDS
    )


def watching(stack: Stack) -> dict[str, str]:
    table = MirrorStatus._meta.db_table  # a model's table name, not input
    return dict(stack.query(f'SELECT kind, state FROM "{table}"'))  # noqa: S608


def change_the_cluster(emulator: Emulator, tag: str) -> None:
    """A node relabelled, a claim created and a slice deleted: a successor must catch up."""
    with Cluster(ClusterConfig(server=emulator.url)) as cluster:
        node = cluster.list_page(Kind.NODES, limit=1)["items"][0]
        node["metadata"].setdefault("labels", {})["takeover"] = tag
        cluster.replace(Kind.NODES, node)
        cluster.create(
            Kind.RESOURCE_CLAIMS,
            {
                "metadata": {"name": f"takeover-{tag}", "namespace": "gpu-test1"},
                "spec": {
                    "devices": {
                        "requests": [
                            {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}
                        ]
                    }
                },
            },
        )
        slices = cluster.list_page(Kind.RESOURCE_SLICES)["items"]
        cluster.delete(Kind.RESOURCE_SLICES, slices[-1]["metadata"]["name"])


def test_the_standby_replica_takes_every_kind_over_when_the_active_one_is_killed(stack):
    stack, emulator = stack
    stack.watchers("watch-a")
    wait_for(lambda: all(holders(stack).values()), 60, "replica a holds every kind")
    wait_for(lambda: exact(stack, emulator), 60, "replica a mirrors the cluster")
    first = holders(stack)
    metrics_port = free_port()
    stack.watchers("watch-b", METRICS_PORT=str(metrics_port))
    time.sleep(LOCK_TTL / 2 + 1)  # b is up and standing by: a keeps every kind
    assert holders(stack) == first

    stack.stop("watch-a", signal.SIGKILL)
    killed = time.monotonic()
    change_the_cluster(emulator, "after-kill")

    def taken_over() -> bool:
        now = holders(stack)
        return all(now[kind] and now[kind] != first[kind] for kind in now)

    wait_for(taken_over, TAKEOVER_SECONDS, "replica b holds every kind")
    took = time.monotonic() - killed
    wait_for(lambda: exact(stack, emulator), TAKEOVER_SECONDS, "the mirror exact again")
    exact_after = time.monotonic() - killed
    print(
        f"takeover after SIGKILL: {took:.1f} s (lock TTL {LOCK_TTL} s); exact {exact_after:.1f} s"
    )
    assert exact_after <= TAKEOVER_SECONDS
    assert set(watching(stack).values()) <= {"watching", "listing"}

    # The successor's own batches are measured on its METRICS_PORT.
    _, _, body = fetch(f"http://127.0.0.1:{metrics_port}/metrics")
    assert b'dra_portal_mirror_batch_duration_seconds_count{kind="resourceclaims"}' in body

    # A rollout: a new replica stands by, the old one gets SIGTERM and hands over at once.
    stack.watchers("watch-c")
    second = holders(stack)
    time.sleep(2)
    stopped = time.monotonic()
    stack.stop("watch-b", signal.SIGTERM)
    wait_for(
        lambda: all(v and v != second[k] for k, v in holders(stack).items()),
        TAKEOVER_SECONDS,
        "replica c holds every kind",
    )
    handed_over = time.monotonic() - stopped
    change_the_cluster(emulator, "after-rollout")
    wait_for(lambda: exact(stack, emulator), TAKEOVER_SECONDS, "the mirror exact after the rollout")
    print(f"hand-over after SIGTERM: {handed_over:.1f} s")
    assert handed_over < LOCK_TTL  # released, not expired
    assert "handing the kinds over" in stack.log("watch-b")
