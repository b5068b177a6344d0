"""Watch streams: history replay, live events, bookmarks, timeouts, 410 and shutdown."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from apiemulator import Emulator
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.errors import Gone, Unavailable
from kube.kinds import Kind


def claim(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": {"devices": {"requests": []}},
    }


def take(stream: Iterator[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """The first `count` non-bookmark events; closing the stream after them."""
    events: list[dict[str, Any]] = []
    for event in stream:
        if event["type"] != "BOOKMARK":
            events.append(event)
        if len(events) == count:
            break
    stream.close()  # type: ignore[attr-defined]
    return events


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(e["type"], e["object"]["metadata"].get("name")) for e in events]


def test_it_replays_added_modified_deleted_in_order_from_a_resource_version(
    cluster: Cluster,
) -> None:
    start = cluster.list_page(Kind.RESOURCE_CLAIMS)["metadata"]["resourceVersion"]
    cluster.create(Kind.RESOURCE_CLAIMS, claim("a"))
    cluster.patch(
        Kind.RESOURCE_CLAIMS, "a", {"metadata": {"labels": {"x": "1"}}}, namespace="default"
    )
    cluster.create(Kind.RESOURCE_CLAIMS, claim("b"))
    cluster.delete(Kind.RESOURCE_CLAIMS, "a", "default")
    cluster.create(Kind.NAMESPACES, {"metadata": {"name": "not-a-claim"}})

    events = take(
        cluster.watch(
            Kind.RESOURCE_CLAIMS, resource_version=start, timeout_seconds=1, allow_bookmarks=False
        ),
        4,
    )

    assert summary(events) == [("ADDED", "a"), ("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "a")]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[0] > int(start)
    assert events[0]["object"]["kind"] == "ResourceClaim"


def test_it_delivers_live_events_to_a_running_watch(cluster: Cluster) -> None:
    start = cluster.list_page(Kind.RESOURCE_CLAIMS)["metadata"]["resourceVersion"]
    received: list[dict[str, Any]] = []

    def watch() -> None:
        for event in cluster.watch(
            Kind.RESOURCE_CLAIMS, resource_version=start, timeout_seconds=5, allow_bookmarks=False
        ):
            received.append(event)
            if event["type"] == "DELETED":
                return

    thread = threading.Thread(target=watch)
    thread.start()
    time.sleep(0.1)
    cluster.create(Kind.RESOURCE_CLAIMS, claim("live"))
    cluster.delete(Kind.RESOURCE_CLAIMS, "live", "default")
    thread.join(5)

    assert summary(received) == [("ADDED", "live"), ("DELETED", "live")]


@pytest.mark.parametrize("resource_version", ["", "0"])
def test_a_watch_without_a_resource_version_starts_with_the_current_state(
    cluster: Cluster, resource_version: str
) -> None:
    cluster.create(Kind.RESOURCE_CLAIMS, claim("a"))
    cluster.create(Kind.RESOURCE_CLAIMS, claim("b"))
    cluster.delete(Kind.RESOURCE_CLAIMS, "a", "default")

    events = take(
        cluster.watch(
            Kind.RESOURCE_CLAIMS,
            resource_version=resource_version,
            timeout_seconds=1,
            allow_bookmarks=False,
        ),
        1,
    )
    assert summary(events) == [("ADDED", "b")]


def test_it_sends_bookmarks_with_the_current_resource_version(cluster: Cluster) -> None:
    start = cluster.list_page(Kind.RESOURCE_CLAIMS)["metadata"]["resourceVersion"]
    latest = cluster.create(Kind.NAMESPACES, {"metadata": {"name": "elsewhere"}})

    events = list(cluster.watch(Kind.RESOURCE_CLAIMS, resource_version=start, timeout_seconds=1))

    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert len(bookmarks) >= 3  # every 0.2 s
    assert (
        bookmarks[-1]["object"]["metadata"]["resourceVersion"]
        == (latest["metadata"]["resourceVersion"])
    )
    assert bookmarks[0]["object"]["kind"] == "ResourceClaim"
    assert {e["type"] for e in events} == {"BOOKMARK"}


def test_by_default_a_quiet_watch_hears_one_bookmark_two_seconds_before_it_times_out() -> None:
    with (
        Emulator(port=0) as emulator,
        Cluster(ClusterConfig(server=emulator.url, read_timeout=10)) as client,
    ):
        start = client.list_page(Kind.RESOURCE_CLAIMS)["metadata"]["resourceVersion"]
        opened = time.monotonic()
        arrivals = []
        for event in client.watch(Kind.RESOURCE_CLAIMS, resource_version=start, timeout_seconds=3):
            arrivals.append((event["type"], time.monotonic() - opened))
        closed = time.monotonic() - opened

    assert [kind for kind, _ in arrivals] == ["BOOKMARK"]  # none every few seconds, none at close
    assert 0.7 <= arrivals[0][1] <= 1.8  # timeoutSeconds 3 - 2
    assert closed >= 2.9


def test_timeout_seconds_ends_the_stream_cleanly(cluster: Cluster) -> None:
    start = cluster.list_page(Kind.RESOURCE_CLAIMS)["metadata"]["resourceVersion"]
    began = time.monotonic()
    events = list(
        cluster.watch(
            Kind.RESOURCE_CLAIMS, resource_version=start, timeout_seconds=1, allow_bookmarks=False
        )
    )
    assert events == []
    assert 0.9 <= time.monotonic() - began < 3


def test_a_watch_older_than_the_compaction_gets_gone(emulator: Emulator, cluster: Cluster) -> None:
    start = cluster.list_page(Kind.RESOURCE_CLAIMS)["metadata"]["resourceVersion"]
    cluster.create(Kind.RESOURCE_CLAIMS, claim("a"))
    emulator.compact()

    with pytest.raises(Gone) as caught:
        list(cluster.watch(Kind.RESOURCE_CLAIMS, resource_version=start, timeout_seconds=1))
    assert caught.value.code == 410
    assert caught.value.reason == "Expired"
    assert caught.value.status is not None and caught.value.status["kind"] == "Status"


def test_the_error_event_is_sent_on_a_200_stream(emulator: Emulator) -> None:
    emulator.store.ensure_namespace("x")
    emulator.compact()
    url = f"{emulator.url}/apis/resource.k8s.io/v1/resourceclaims?watch=1&resourceVersion=1"
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.status == 200
        event = json.loads(response.readline())
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410


def test_a_watch_from_the_compaction_point_keeps_working(
    emulator: Emulator, cluster: Cluster
) -> None:
    cluster.create(Kind.RESOURCE_CLAIMS, claim("a"))
    point = str(emulator.compact())
    cluster.create(Kind.RESOURCE_CLAIMS, claim("b"))
    events = take(
        cluster.watch(
            Kind.RESOURCE_CLAIMS, resource_version=point, timeout_seconds=1, allow_bookmarks=False
        ),
        1,
    )
    assert summary(events) == [("ADDED", "b")]


def test_a_label_selected_watch_sees_objects_leave_and_enter(cluster: Cluster) -> None:
    start = cluster.list_page(Kind.RESOURCE_CLAIMS)["metadata"]["resourceVersion"]
    cluster.create(Kind.RESOURCE_CLAIMS, claim("a", {"team": "x"}))
    cluster.patch(
        Kind.RESOURCE_CLAIMS, "a", {"metadata": {"labels": {"team": "y"}}}, namespace="default"
    )
    cluster.patch(
        Kind.RESOURCE_CLAIMS, "a", {"metadata": {"labels": {"team": "x"}}}, namespace="default"
    )

    events = take(
        cluster.watch(
            Kind.RESOURCE_CLAIMS,
            resource_version=start,
            timeout_seconds=1,
            allow_bookmarks=False,
            label_selector="team=x",
        ),
        3,
    )
    assert summary(events) == [("ADDED", "a"), ("DELETED", "a"), ("ADDED", "a")]


def test_a_namespaced_watch_sees_only_its_namespace(cluster: Cluster) -> None:
    start = cluster.list_page(Kind.RESOURCE_CLAIMS)["metadata"]["resourceVersion"]
    cluster.create(Kind.NAMESPACES, {"metadata": {"name": "other"}})
    cluster.create(Kind.RESOURCE_CLAIMS, claim("here"))
    cluster.create(Kind.RESOURCE_CLAIMS, claim("there"), namespace="other")
    events = take(
        cluster.watch(
            Kind.RESOURCE_CLAIMS,
            namespace="other",
            resource_version=start,
            timeout_seconds=1,
            allow_bookmarks=False,
        ),
        1,
    )
    assert summary(events) == [("ADDED", "there")]


def test_send_initial_events_ends_with_an_annotated_bookmark(emulator: Emulator) -> None:
    emulator.store.ensure_namespace("x")
    url = (
        f"{emulator.url}/api/v1/namespaces?watch=true&sendInitialEvents=true"
        "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
    )
    with urllib.request.urlopen(url, timeout=5) as response:
        events = [json.loads(line) for line in response if line.strip()]
    initial = [e for e in events if e["type"] == "ADDED"]
    marker = events[len(initial)]
    assert {e["object"]["metadata"]["name"] for e in initial} >= {"default", "x"}
    assert marker["type"] == "BOOKMARK"
    assert marker["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_close_watches_breaks_streams_as_unavailable(emulator: Emulator, cluster: Cluster) -> None:
    start = str(emulator.resource_version)
    outcome: list[BaseException] = []

    def watch() -> None:
        try:
            list(cluster.watch(Kind.NODES, resource_version=start, timeout_seconds=30))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=watch)
    thread.start()
    deadline = time.monotonic() + 5
    while emulator.state()["activeWatches"] == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert emulator.close_watches() == 1
    thread.join(5)

    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], Unavailable)


def test_stopping_the_emulator_ends_watch_streams_promptly() -> None:
    emulator = Emulator(port=0).start()
    cluster = Cluster(ClusterConfig(server=emulator.url))
    ended = threading.Event()

    def watch() -> None:
        for _ in cluster.watch(Kind.NODES, resource_version="1", timeout_seconds=60):
            pass
        ended.set()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    time.sleep(0.2)
    began = time.monotonic()
    emulator.stop()

    assert ended.wait(5)
    assert time.monotonic() - began < 3
    cluster.close()


def test_closing_the_generator_closes_the_server_side_stream(
    emulator: Emulator, cluster: Cluster
) -> None:
    stream = cluster.watch(Kind.NAMESPACES, resource_version="", timeout_seconds=30)
    first = next(stream)
    assert first["type"] == "ADDED"
    assert emulator.state()["activeWatches"] == 1
    stream.close()
    emulator.store.ensure_namespace("wake-up")  # the server notices on its next write

    deadline = time.monotonic() + 5
    while emulator.state()["activeWatches"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert emulator.state()["activeWatches"] == 0
