"""Restarted and replaced clusters: resourceVersions the server has not reached or has
forgotten, answered as kube-apiserver 1.36 answers them, and the cluster's identity."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from apiemulator import Emulator
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.errors import Gone, Unavailable
from kube.kinds import Kind

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"


def fetch(emulator: Emulator, path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(f"{emulator.url}{path}", timeout=5) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def claim(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"devices": {}}}


@pytest.fixture
def restarted() -> Any:
    """An emulator whose history starts at resourceVersion 1000."""
    with Emulator(port=0, bookmark_interval=0.1, initial_resource_version=1000) as emu:
        yield emu


def test_a_history_can_start_at_a_given_resource_version(restarted: Emulator) -> None:
    with Cluster(ClusterConfig(server=restarted.url)) as cluster:
        created = cluster.create(Kind.RESOURCE_CLAIMS, claim("a"))
    assert int(created["metadata"]["resourceVersion"]) > 1000


@pytest.mark.parametrize("match", ["", "&resourceVersionMatch=NotOlderThan"])
def test_a_list_from_a_future_resource_version_is_a_504_too_large(
    emulator: Emulator, match: str
) -> None:
    future = emulator.resource_version + 100
    code, status = fetch(emulator, f"{CLAIMS}?resourceVersion={future}{match}")
    assert code == 504
    assert status["kind"] == "Status" and status["reason"] == "Timeout"
    assert status["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    assert status["details"]["retryAfterSeconds"] == 1
    assert f"Too large resource version: {future}" in status["message"]


def test_a_watch_from_a_future_resource_version_stays_silent_until_its_timeout(
    emulator: Emulator, cluster: Cluster
) -> None:
    future = str(emulator.resource_version + 100)
    started = time.monotonic()
    events = list(cluster.watch(Kind.RESOURCE_CLAIMS, resource_version=future, timeout_seconds=1))
    assert events == []  # not even a bookmark, although the interval is 0.2 s
    assert time.monotonic() - started >= 0.9


def test_a_watch_from_before_the_history_gets_an_expired_error(restarted: Emulator) -> None:
    with Cluster(ClusterConfig(server=restarted.url, read_timeout=5)) as cluster:
        cluster.create(Kind.RESOURCE_CLAIMS, claim("a"))
        with pytest.raises(Gone) as caught:
            list(cluster.watch(Kind.RESOURCE_CLAIMS, resource_version="5", timeout_seconds=1))
    assert caught.value.code == 410
    assert caught.value.reason == "Expired"
    assert caught.value.message == "too old resource version: 5 (1000)"


def test_kube_system_carries_the_cluster_identity() -> None:
    with Emulator(port=0, cluster_uid="11111111-2222-3333-4444-555555555555") as emulator:
        with Cluster(ClusterConfig(server=emulator.url)) as cluster:
            kube_system = cluster.get(Kind.NAMESPACES, "kube-system")
        assert kube_system["metadata"]["uid"] == "11111111-2222-3333-4444-555555555555"
        assert emulator.state()["clusterUID"] == emulator.cluster_uid
        captured = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}}
        captured["metadata"]["uid"] = "99999999-0000-4000-8000-000000000000"
        emulator.load([captured])  # fixtures captured elsewhere do not change the identity
        assert emulator.cluster_uid == "11111111-2222-3333-4444-555555555555"
    assert Emulator(port=0).cluster_uid != Emulator(port=0).cluster_uid


def test_a_replaced_cluster_has_a_new_identity_and_none_of_the_old_objects(
    emulator: Emulator, cluster: Cluster
) -> None:
    cluster.create(Kind.RESOURCE_CLAIMS, claim("old"))
    before = emulator.cluster_uid
    request = urllib.request.Request(
        f"{emulator.url}/_emulator/replace-cluster",
        data=json.dumps({"resourceVersion": 3}).encode(),
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
        answer = json.loads(response.read())
    assert answer["clusterUID"] == emulator.cluster_uid != before
    assert cluster.get(Kind.NAMESPACES, "kube-system")["metadata"]["uid"] == answer["clusterUID"]
    assert cluster.list_page(Kind.RESOURCE_CLAIMS)["items"] == []
    assert 3 < emulator.resource_version < 10


def test_openapi_v3_tells_kubectl_the_server_validates_fields(emulator: Emulator) -> None:
    code, index = fetch(emulator, "/openapi/v3")
    assert code == 200
    assert {"api/v1", "apis/resource.k8s.io/v1"} <= set(index["paths"])
    code, document = fetch(emulator, index["paths"]["apis/resource.k8s.io/v1"]["serverRelativeURL"])
    assert code == 200 and document["openapi"].startswith("3.")
    # What kubectl looks for: the kind's PATCH operation and its fieldValidation parameter.
    patch = document["paths"][
        "/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"
    ]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "resource.k8s.io",
        "version": "v1",
        "kind": "ResourceClaim",
    }
    assert {"name": "fieldValidation", "in": "query"} in [
        {"name": p["name"], "in": p["in"]} for p in patch["parameters"]
    ]
    schemas = document["components"]["schemas"]
    assert schemas["io.k8s.api.resource.v1.ResourceClaim"]["x-kubernetes-group-version-kind"] == [
        {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceClaim"}
    ]
    for ref in _refs(document):
        assert ref.removeprefix("#/components/schemas/") in schemas, ref


def test_openapi_v2_and_the_core_group_are_served(emulator: Emulator) -> None:
    code, swagger = fetch(emulator, "/openapi/v2")
    assert code == 200 and swagger["swagger"] == "2.0"
    assert "io.k8s.api.core.v1.Pod" in swagger["definitions"]
    for ref in _refs(swagger):
        assert ref.removeprefix("#/definitions/") in swagger["definitions"], ref
    code, core = fetch(emulator, "/openapi/v3/api/v1")
    assert code == 200 and "/api/v1/nodes/{name}/status" in core["paths"]
    assert fetch(emulator, "/openapi/v3/apis/nothing.example.com/v1")[0] == 404


def _refs(document: Any) -> list[str]:
    if isinstance(document, dict):
        found = [document["$ref"]] if "$ref" in document else []
        return found + [ref for value in document.values() for ref in _refs(value)]
    if isinstance(document, list):
        return [ref for value in document for ref in _refs(value)]
    return []


def test_a_restart_keeps_the_objects_but_answers_410_to_every_earlier_resource_version() -> None:
    with (
        Emulator(port=0, bookmark_interval=0.2) as emulator,
        Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client,
    ):
        created = client.create(Kind.NAMESPACES, {"metadata": {"name": "kept"}})
        before = created["metadata"]["resourceVersion"]
        watch = client.watch(Kind.NAMESPACES, resource_version=before, timeout_seconds=30)
        assert next(watch)["type"] == "BOOKMARK"  # the watch is open
        client.create(Kind.NAMESPACES, {"metadata": {"name": "later"}})

        restarted_at = emulator.restart()

        with pytest.raises(Unavailable):  # the open watch is cut off, as by a restart
            list(watch)
        assert client.get(Kind.NAMESPACES, "kept")["metadata"]["uid"] == created["metadata"]["uid"]
        with pytest.raises(Gone):
            next(client.watch(Kind.NAMESPACES, resource_version=before, timeout_seconds=1))
        after = client.list_page(Kind.NAMESPACES)["metadata"]["resourceVersion"]
        assert int(after) == restarted_at
        events = list(client.watch(Kind.NAMESPACES, resource_version=after, timeout_seconds=1))
        assert {e["type"] for e in events} <= {"BOOKMARK"}


def test_an_api_server_that_goes_away_refuses_connections_then_comes_back_with_its_objects():
    with (
        Emulator(port=0, bookmark_interval=0.2) as emulator,
        Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client,
    ):
        created = client.create(Kind.NAMESPACES, {"metadata": {"name": "kept"}})
        before = created["metadata"]["resourceVersion"]
        watch = client.watch(Kind.NAMESPACES, resource_version=before, timeout_seconds=30)
        assert next(watch)["type"] == "BOOKMARK"
        client.create(Kind.NAMESPACES, {"metadata": {"name": "later"}})
        port = emulator.port

        emulator.go_away()

        with contextlib.suppress(Unavailable):  # the open watch ends with the server
            list(watch)
        with pytest.raises(Unavailable):  # and nothing answers on its port
            client.get(Kind.NAMESPACES, "kept")

        emulator.come_back()

        assert emulator.port == port
        assert client.get(Kind.NAMESPACES, "kept")["metadata"]["uid"] == created["metadata"]["uid"]
        with pytest.raises(Gone):  # a restarted server's watch cache starts now
            next(client.watch(Kind.NAMESPACES, resource_version=before, timeout_seconds=1))
        after = client.list_page(Kind.NAMESPACES)["metadata"]["resourceVersion"]
        client.create(Kind.NAMESPACES, {"metadata": {"name": "after"}})
        events = list(client.watch(Kind.NAMESPACES, resource_version=after, timeout_seconds=1))
        assert [e["object"]["metadata"]["name"] for e in events if e["type"] == "ADDED"] == [
            "after"
        ]


def test_history_older_than_the_window_is_compacted_as_etcd_compacts_it() -> None:
    """A watch or a continue token from before the window answers 410 within about a second
    of leaving it; a watch from inside the window is served (issue 26, item 11)."""
    with (
        Emulator(port=0, bookmark_interval=0.2, history_window=1.0) as emulator,
        Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client,
    ):
        old = client.create(Kind.RESOURCE_CLAIMS, claim("old"))["metadata"]["resourceVersion"]
        client.create(Kind.RESOURCE_CLAIMS, claim("other"))
        page = client.list_page(Kind.RESOURCE_CLAIMS, limit=1)
        token = page["metadata"]["continue"]
        assert token
        # A change after the list: compaction past it leaves the token's version behind.
        later = client.create(Kind.RESOURCE_CLAIMS, claim("later"))["metadata"]
        deadline = time.monotonic() + 10
        while emulator.store.compacted_rv < int(later["resourceVersion"]):
            assert time.monotonic() < deadline, "nothing compacted in 10 s"
            time.sleep(0.1)
        recent = client.create(Kind.RESOURCE_CLAIMS, claim("recent"))["metadata"]
        with pytest.raises(Gone) as caught:
            next(client.watch(Kind.RESOURCE_CLAIMS, resource_version=old, timeout_seconds=1))
        assert caught.value.code == 410
        assert caught.value.message.startswith(f"too old resource version: {old} (")
        code, status = fetch(emulator, f"{CLAIMS}?limit=1&continue={token}")
        assert code == 410 and status["reason"] == "Expired"
        # From inside the window: the watch is served (a bookmark at least).
        served = list(
            client.watch(
                Kind.RESOURCE_CLAIMS,
                resource_version=str(int(recent["resourceVersion"]) - 1),
                timeout_seconds=1,
            )
        )
        assert any(e["type"] == "ADDED" for e in served)


def test_compaction_by_age_keeps_what_is_younger_and_no_window_keeps_everything() -> None:
    emulator = Emulator(port=0, history_window=None)
    store = emulator.store
    for name in ("a", "b", "c"):
        store.create(emulator_resource(), "default", claim(name))
    kept = len(store.log)
    assert store.compact_older_than(3600) == store.compacted_rv
    assert len(store.log) == kept  # nothing an hour old
    store.compact_older_than(0)
    assert store.log == [] and store.compacted_rv == store.rv


def emulator_resource() -> Any:
    from apiemulator.resources import by_kind

    return by_kind["ResourceClaim"]
