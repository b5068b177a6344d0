"""Fault injection, through the Python API and the HTTP control endpoint."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest

from apiemulator import Emulator
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.errors import Gone, NotFound, Unavailable
from kube.kinds import Kind


def control(emulator: Emulator, method: str, path: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{emulator.url}/_emulator/{path}", data=data, method=method)
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


def test_an_injected_500_surfaces_as_unavailable_once(cluster: Cluster, emulator: Emulator) -> None:
    emulator.fail_next()
    with pytest.raises(Unavailable) as caught:
        cluster.list_page(Kind.NODES)
    assert caught.value.code == 500
    assert cluster.list_page(Kind.NODES)["kind"] == "NodeList"


def test_a_fault_matches_only_its_path_and_method(cluster: Cluster, emulator: Emulator) -> None:
    emulator.fail_next(2, status=503, path=r"/resourceclaims", method="POST")
    cluster.list_page(Kind.RESOURCE_CLAIMS)
    cluster.list_page(Kind.NODES)
    body = {"metadata": {"name": "c"}, "spec": {}}
    with pytest.raises(Unavailable) as caught:
        cluster.create(Kind.RESOURCE_CLAIMS, body, namespace="default")
    assert caught.value.code == 503
    assert len(emulator.faults()) == 1 and emulator.faults()[0].count == 1


def test_a_dropped_connection_surfaces_as_unavailable(cluster: Cluster, emulator: Emulator) -> None:
    emulator.drop_next(path="/api/v1/nodes")
    with pytest.raises(Unavailable):
        cluster.list_page(Kind.NODES)
    assert cluster.list_page(Kind.NODES)["items"] == []


def test_a_watch_dropped_mid_stream_raises_after_the_events_sent(
    cluster: Cluster, emulator: Emulator
) -> None:
    emulator.drop_next(path="namespaces", after_events=2)
    received: list[str] = []
    with pytest.raises(Unavailable):
        for event in cluster.watch(Kind.NAMESPACES, resource_version="", timeout_seconds=10):
            received.append(event["object"]["metadata"]["name"])
    assert received == ["default", "kube-node-lease"]


def test_latency_delays_matching_requests(cluster: Cluster, emulator: Emulator) -> None:
    emulator.add_latency(0.3, count=1, path="/version")
    began = time.monotonic()
    cluster.version()
    slow = time.monotonic() - began
    began = time.monotonic()
    cluster.version()
    fast = time.monotonic() - began
    assert slow >= 0.3 > fast


def test_a_request_slower_than_the_read_timeout_is_unavailable(emulator: Emulator) -> None:
    emulator.add_latency(1.5, path="/version")
    with (
        Cluster(ClusterConfig(server=emulator.url, read_timeout=0.5)) as impatient,
        pytest.raises(Unavailable),
    ):
        impatient.version()
    emulator.clear_faults()


def test_the_control_endpoint_injects_and_clears_faults(
    cluster: Cluster, emulator: Emulator
) -> None:
    listed = control(
        emulator, "POST", "faults", {"action": "error", "count": 1, "status": 500, "path": "nodes"}
    )
    assert listed["faults"][0]["status"] == 500
    with pytest.raises(Unavailable):
        cluster.list_page(Kind.NODES)

    control(emulator, "POST", "faults", [{"action": "drop", "count": None}])
    assert len(control(emulator, "GET", "faults")["faults"]) == 1
    assert control(emulator, "DELETE", "faults") == {"faults": []}
    cluster.list_page(Kind.NODES)


def test_the_control_endpoint_compacts_and_closes_watches(
    cluster: Cluster, emulator: Emulator
) -> None:
    start = cluster.list_page(Kind.NODES)["metadata"]["resourceVersion"]
    cluster.create(Kind.NODES, {"metadata": {"name": "n1"}})
    compacted = control(emulator, "POST", "compact")
    assert compacted["compactedResourceVersion"] == str(emulator.resource_version)
    with pytest.raises(Gone):
        list(cluster.watch(Kind.NODES, resource_version=start, timeout_seconds=1))
    assert set(control(emulator, "POST", "close-watches")) == {"closed"}


def test_the_control_endpoint_loads_objects_and_reports_state(
    cluster: Cluster, emulator: Emulator
) -> None:
    items = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u-1"}}]
    assert control(emulator, "POST", "load", {"kind": "List", "items": items}) == {"loaded": 1}
    state = control(emulator, "GET", "state")
    assert state["counts"]["nodes"] == 1
    assert state["resourceVersion"] == str(emulator.resource_version)
    assert cluster.get(Kind.NODES, "n1")["metadata"]["uid"] == "u-1"
    with pytest.raises(NotFound):
        cluster.get(Kind.NODES, "n2")


def test_a_watch_dropped_before_any_event_raises_unavailable(
    cluster: Cluster, emulator: Emulator
) -> None:
    emulator.drop_next(path="namespaces")
    with pytest.raises(Unavailable):
        next(cluster.watch(Kind.NAMESPACES, resource_version="", timeout_seconds=10))
