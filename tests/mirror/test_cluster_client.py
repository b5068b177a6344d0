"""kube.client over real HTTP: configuration, raw JSON, error mapping, watch parsing."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiemulator import Emulator
from dra.features import NEWEST_VERSION
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.errors import (
    AlreadyExists,
    ClusterError,
    Conflict,
    FieldManagerConflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    Unavailable,
)
from kube.kinds import Kind

# Fields of resource.k8s.io/v1 at 1.36 that older typed clients lack (consumable capacity,
# tolerations, constraints across requests): raw JSON carries them untouched.
FUTURE_CLAIM: dict[str, Any] = {
    "metadata": {"name": "future", "namespace": "default", "labels": {"portal/request": "7"}},
    "spec": {
        "devices": {
            "requests": [
                {
                    "name": "gpu",
                    "exactly": {
                        "deviceClassName": "gpu.nvidia.com",
                        "capacity": {"requests": {"memory": "10Gi"}},
                        "tolerations": [{"key": "maintenance", "operator": "Exists"}],
                        # What the API server would fill in anyway (as its defaults).
                        "allocationMode": "ExactCount",
                        "count": 1,
                    },
                }
            ],
            "constraints": [{"requests": ["gpu"], "distinctAttribute": "gpu.nvidia.com/uuid"}],
        },
    },
}


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    with Emulator(port=0, bookmark_interval=0.2) as emu:
        yield emu


@pytest.fixture
def cluster(emulator: Emulator) -> Iterator[Cluster]:
    with Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client:
        yield client


# -- a scripted HTTP server for what the emulator never does --------------------------------


Script = Callable[[BaseHTTPRequestHandler], None]


@pytest.fixture
def scripted() -> Iterator[Callable[[Script], str]]:
    servers: list[ThreadingHTTPServer] = []

    def serve(script: Script) -> str:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                script(self)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def send_chunks(handler: BaseHTTPRequestHandler, chunks: list[bytes], pause: float = 0.05) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    for chunk in chunks:
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        handler.wfile.flush()
        time.sleep(pause)
    handler.wfile.write(b"0\r\n\r\n")


def send_json(handler: BaseHTTPRequestHandler, code: int, body: Any) -> None:
    data = json.dumps(body).encode()
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


# -- configuration ------------------------------------------------------------------------


def write_kubeconfig(path: Path, contexts: dict[str, str], current: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": n, "cluster": {"server": url}} for n, url in contexts.items()],
        "users": [{"name": "nobody", "user": {}}],
        "contexts": [{"name": n, "context": {"cluster": n, "user": "nobody"}} for n in contexts],
        "current-context": current,
    }
    path.write_text(yaml.safe_dump(config))
    return path


def test_it_reads_the_kubeconfig_named_by_the_environment(
    emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(emulator.kubeconfig(tmp_path / "config")))
    with Cluster() as cluster:
        assert cluster.version().version == "{}.{}".format(*NEWEST_VERSION)
        assert cluster.name == "default"


def test_it_uses_the_context_it_is_given(emulator: Emulator, tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(
        tmp_path / "config",
        {"dead": "http://127.0.0.1:9", "emulator": emulator.url},
        current="dead",
    )
    config = ClusterConfig(name="lab", kubeconfig=str(kubeconfig), context="emulator")
    with Cluster(config) as cluster:
        assert cluster.list_page(Kind.NAMESPACES)["kind"] == "NamespaceList"
        assert cluster.name == "lab"


def test_a_missing_kubeconfig_is_a_cluster_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    with pytest.raises(ClusterError, match="cannot configure cluster"):
        Cluster()


def test_in_cluster_configuration_outside_a_pod_is_a_cluster_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ClusterError):
        Cluster(ClusterConfig(in_cluster=True))


# -- raw JSON -------------------------------------------------------------------------------


def test_newer_fields_survive_create_get_list_watch_and_apply(cluster: Cluster) -> None:
    start = cluster.list_page(Kind.RESOURCE_CLAIMS)["metadata"]["resourceVersion"]
    created = cluster.create(Kind.RESOURCE_CLAIMS, FUTURE_CLAIM)
    fetched = cluster.get(Kind.RESOURCE_CLAIMS, "future", "default")
    listed = cluster.list_page(Kind.RESOURCE_CLAIMS, namespace="default")["items"][0]
    watched = next(cluster.watch(Kind.RESOURCE_CLAIMS, resource_version=start, timeout_seconds=1))[
        "object"
    ]
    applied = cluster.apply(
        Kind.RESOURCE_CLAIMS,
        {"metadata": {"name": "future", "namespace": "default", "labels": {"applied": "1"}}},
    )

    for obj in (created, fetched, listed, watched, applied):
        assert obj["spec"] == FUTURE_CLAIM["spec"]
    assert applied["metadata"]["labels"] == {"portal/request": "7", "applied": "1"}
    assert FUTURE_CLAIM["metadata"] == {
        "name": "future",
        "namespace": "default",
        "labels": {"portal/request": "7"},
    }  # the caller's dict is not modified


def test_create_puts_the_object_in_the_namespace_it_is_given(cluster: Cluster) -> None:
    cluster.create(Kind.NAMESPACES, {"metadata": {"name": "team-a"}})
    created = cluster.create(Kind.RESOURCE_CLAIMS, FUTURE_CLAIM, namespace="team-a")
    assert created["metadata"]["namespace"] == "team-a"


def test_a_namespaced_kind_without_a_namespace_is_invalid(cluster: Cluster) -> None:
    with pytest.raises(Invalid):
        cluster.apply(Kind.RESOURCE_CLAIMS, {"metadata": {"name": "x"}})


def test_list_all_follows_continue_tokens(cluster: Cluster) -> None:
    for index in range(7):
        cluster.create(Kind.NODES, {"metadata": {"name": f"node-{index}"}})
    items, resource_version = cluster.list_all(Kind.NODES, page_size=3)
    assert [i["metadata"]["name"] for i in items] == [f"node-{i}" for i in range(7)]
    assert resource_version == cluster.list_page(Kind.NODES)["metadata"]["resourceVersion"]


def test_status_can_be_written_with_server_side_apply(cluster: Cluster) -> None:
    cluster.create(Kind.RESOURCE_CLAIMS, FUTURE_CLAIM)
    allocation = {
        "devices": {"results": [{"request": "gpu", "driver": "d", "pool": "p", "device": "g"}]}
    }
    written = cluster.patch_status(
        Kind.RESOURCE_CLAIMS,
        "future",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "future", "namespace": "default"},
            "status": {"allocation": allocation},
        },
        namespace="default",
        patch_type="apply",
        force=True,
    )
    assert written["status"]["allocation"] == allocation
    assert any(f["manager"] == "dra-portal" for f in written["metadata"]["managedFields"])


def test_a_json_patch_must_be_a_list_of_operations(cluster: Cluster) -> None:
    with pytest.raises(ValueError, match="list of operations"):
        cluster.patch(Kind.NODES, "n", {"op": "add"}, patch_type="json")  # type: ignore[arg-type]


def test_delete_checks_the_uid_precondition(cluster: Cluster) -> None:
    cluster.create(Kind.NODES, {"metadata": {"name": "n1"}})
    with pytest.raises(Conflict):
        cluster.delete(Kind.NODES, "n1", uid="someone-else")
    assert cluster.delete(Kind.NODES, "n1")["status"] == "Success"


# -- errors ---------------------------------------------------------------------------------


def test_api_errors_become_our_exceptions(cluster: Cluster) -> None:
    cluster.create(Kind.NODES, {"metadata": {"name": "n1"}})
    with pytest.raises(NotFound):
        cluster.get(Kind.NODES, "missing")
    with pytest.raises(AlreadyExists):
        cluster.create(Kind.NODES, {"metadata": {"name": "n1"}})
    with pytest.raises(Conflict):
        cluster.replace(Kind.NODES, {"metadata": {"name": "n1", "resourceVersion": "1"}})


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (500, Unavailable),
        (503, Unavailable),
        (429, Unavailable),
        (403, Forbidden),
        (401, Forbidden),
        (422, Invalid),
        (400, Invalid),
        (410, Gone),
        (418, ClusterError),
    ],
)
def test_http_codes_map_to_exception_types(
    emulator: Emulator, cluster: Cluster, code: int, expected: type[ClusterError]
) -> None:
    emulator.fail_next(status=code)
    with pytest.raises(expected) as caught:
        cluster.list_page(Kind.PODS)
    assert caught.value.code == code
    assert caught.value.status is not None and caught.value.status["code"] == code


def test_a_refused_connection_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with Cluster(ClusterConfig(server=f"http://127.0.0.1:{port}")) as cluster:
        with pytest.raises(Unavailable):
            cluster.version()
        with pytest.raises(Unavailable):
            next(cluster.watch(Kind.NODES, resource_version="1", timeout_seconds=1))


def test_a_non_status_error_body_still_maps_by_code(
    scripted: Callable[[Script], str],
) -> None:
    def script(handler: BaseHTTPRequestHandler) -> None:
        body = b"upstream connect error"
        handler.send_response(502)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    with (
        Cluster(ClusterConfig(server=scripted(script))) as cluster,
        pytest.raises(Unavailable, match="upstream connect error") as caught,
    ):
        cluster.version()
    assert caught.value.status is None


def test_version_parses_provider_suffixes(scripted: Callable[[Script], str]) -> None:
    def script(handler: BaseHTTPRequestHandler) -> None:
        send_json(handler, 200, {"major": "1", "minor": "33+", "gitVersion": "v1.33.5-eks-113cf36"})

    with Cluster(ClusterConfig(server=scripted(script))) as cluster:
        version = cluster.version()
    assert (version.minor, version.version) == ("33+", "1.33")


# -- watch parsing --------------------------------------------------------------------------


def event(kind: str, name: str, rv: int) -> bytes:
    obj = {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": name, "resourceVersion": str(rv)},
    }
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


def test_watch_reassembles_lines_split_across_chunks(scripted: Callable[[Script], str]) -> None:
    stream = event("ADDED", "a", 2) + event("MODIFIED", "a", 3) + event("DELETED", "a", 4)
    pieces = [stream[:10], stream[10:70], stream[70:-1], stream[-1:]]

    with Cluster(ClusterConfig(server=scripted(lambda h: send_chunks(h, pieces)))) as cluster:
        events = list(cluster.watch(Kind.NODES, resource_version="1", timeout_seconds=5))

    assert [(e["type"], e["object"]["metadata"]["resourceVersion"]) for e in events] == [
        ("ADDED", "2"),
        ("MODIFIED", "3"),
        ("DELETED", "4"),
    ]


def test_watch_parses_a_last_line_without_newline(scripted: Callable[[Script], str]) -> None:
    chunks = [event("ADDED", "a", 2).rstrip(b"\n")]
    with Cluster(ClusterConfig(server=scripted(lambda h: send_chunks(h, chunks)))) as cluster:
        events = list(cluster.watch(Kind.NODES, resource_version="1", timeout_seconds=5))
    assert [e["type"] for e in events] == ["ADDED"]


@pytest.mark.parametrize(
    ("code", "expected"), [(410, Gone), (500, Unavailable), (403, Forbidden), (400, Invalid)]
)
def test_watch_error_events_raise_by_code(
    scripted: Callable[[Script], str], code: int, expected: type[ClusterError]
) -> None:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "message": f"boom {code}",
        "reason": "Whatever",
    }
    chunks = [event("ADDED", "a", 2), json.dumps({"type": "ERROR", "object": status}).encode()]
    received: list[str] = []
    with (
        Cluster(ClusterConfig(server=scripted(lambda h: send_chunks(h, chunks)))) as cluster,
        pytest.raises(expected, match=f"boom {code}") as caught,
    ):
        for e in cluster.watch(Kind.NODES, resource_version="1", timeout_seconds=5):
            received.append(e["type"])
    assert received == ["ADDED"]
    assert caught.value.status == status


def test_a_stalled_watch_times_out_as_unavailable(scripted: Callable[[Script], str]) -> None:
    release = threading.Event()

    def script(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        handler.wfile.flush()
        release.wait(10)

    config = ClusterConfig(server=scripted(script), watch_timeout_margin=0.3)
    began = time.monotonic()
    with Cluster(config) as cluster, pytest.raises(Unavailable):
        list(cluster.watch(Kind.NODES, resource_version="1", timeout_seconds=1))
    release.set()
    assert 1.2 <= time.monotonic() - began < 5


def test_a_malformed_watch_line_is_unavailable(scripted: Callable[[Script], str]) -> None:
    chunks = [b"<html>proxy error</html>\n"]
    with (
        Cluster(ClusterConfig(server=scripted(lambda h: send_chunks(h, chunks)))) as cluster,
        pytest.raises(Unavailable, match="malformed watch event"),
    ):
        list(cluster.watch(Kind.NODES, resource_version="1", timeout_seconds=5))


def test_writes_are_strict_so_the_server_never_drops_a_field_silently(cluster: Cluster) -> None:
    body = {"metadata": {"name": "typo", "namespace": "default"}, "spec": {"devics": {}}}
    with pytest.raises(Invalid, match='strict decoding error: unknown field "spec.devics"'):
        cluster.create(Kind.RESOURCE_CLAIMS, body)
    with pytest.raises(NotFound):
        cluster.get(Kind.RESOURCE_CLAIMS, "typo", "default")


def test_a_lenient_client_logs_the_servers_warnings(
    emulator: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    config = ClusterConfig(server=emulator.url, field_validation="Warn")
    body = {"metadata": {"name": "typo", "namespace": "default"}, "spec": {"devics": {}}}
    with Cluster(config) as lenient, caplog.at_level("WARNING", logger="kube.client"):
        created = lenient.create(Kind.RESOURCE_CLAIMS, body)
    assert "devics" not in created["spec"]
    assert 'the API server warns: 299 - "unknown field \\"spec.devics\\""' in caplog.text


def test_an_apply_over_another_managers_field_is_a_field_manager_conflict(
    cluster: Cluster,
) -> None:
    claim = {"metadata": {"name": "c", "namespace": "default", "labels": {"owner": "kubectl"}}}
    cluster.apply(
        Kind.RESOURCE_CLAIMS, {**claim, "spec": FUTURE_CLAIM["spec"]}, field_manager="kubectl"
    )
    changed = {"metadata": {**claim["metadata"], "labels": {"owner": "portal"}}}

    with pytest.raises(FieldManagerConflict) as conflict:
        cluster.apply(Kind.RESOURCE_CLAIMS, changed)
    assert isinstance(conflict.value, Conflict)
    assert conflict.value.fields == [".metadata.labels.owner"]
    assert 'conflict with "kubectl"' in conflict.value.message

    forced = cluster.apply(Kind.RESOURCE_CLAIMS, changed, force=True)
    assert forced["metadata"]["labels"] == {"owner": "portal"}
