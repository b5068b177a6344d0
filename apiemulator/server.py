"""HTTP front of the emulator: routing, list/watch streaming, fault injection, `Emulator`."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import yaml

from .errors import ApiError, status_body
from .openapi import openapi_document
from .resources import (
    RESOURCES,
    Resource,
    api_group,
    api_group_list,
    api_resource_list,
    by_kind,
)
from .selectors import SelectorError, parse_field_selector, parse_label_selector
from .store import Entry, Store, WatchClosed, dumps

__all__ = ["Emulator", "Fault"]

_PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/json-patch+json": "json",
    "application/apply-patch+yaml": "apply",
}
_DEFAULT_WATCH_TIMEOUT = 1800.0
_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
_SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass
class Fault:
    """One injected fault. `count=None` means until cleared.

    action: "error" answers `status` (500) with a Status body; "drop" closes the connection
    (for a watch: after `after_events` events); "latency" sleeps `seconds` and then serves.
    """

    action: str
    count: int | None = 1
    path: str | None = None  # regex searched in the request path
    method: str | None = None
    status: int = 500
    seconds: float = 0.0
    after_events: int = 0

    def matches(self, method: str, path: str) -> bool:
        if self.method and self.method.upper() != method:
            return False
        return not self.path or re.search(self.path, path) is not None


class _Abort(Exception):  # noqa: N818 - control flow: drop the connection without answering
    pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    emulator: Emulator

    def __init__(self, address: tuple[str, int], emulator: Emulator) -> None:
        self.emulator = emulator
        self.connections: set[socket.socket] = set()
        self.threads: set[threading.Thread] = set()
        self.conn_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self.conn_lock:
            self.connections.add(request)
            self.threads.add(threading.current_thread())
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.conn_lock:
                self.connections.discard(request)
                self.threads.discard(threading.current_thread())

    def close_connections(self) -> None:
        with self.conn_lock:
            connections = list(self.connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def join_threads(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self.conn_lock:
            threads = list(self.threads)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if self.server.emulator.verbose:
            super().log_message(format, *args)

    def do_GET(self) -> None:  # noqa: N802
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._dispatch("PUT")

    def do_PATCH(self) -> None:  # noqa: N802
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802
        self._dispatch("DELETE")

    # -- plumbing ---------------------------------------------------------------------------

    def _send(self, code: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_json(self, code: int, obj: Any) -> None:
        self._send(code, dumps(obj))

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _dispatch(self, method: str) -> None:
        emulator = self.server.emulator
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        body = self._read_body()
        try:
            if path.startswith("/_emulator/"):
                self._control(method, path, body)
                return
            fault = emulator._take_fault(method, path)
            if fault is not None and fault.action == "error":
                reason = _REASONS.get(fault.status, "InternalError")
                raise ApiError(fault.status, reason, f"injected fault: {fault.status}")
            is_watch = query.get("watch") in ("true", "1")
            if fault is not None and fault.action == "drop" and not is_watch:
                raise _Abort
            self._route(method, path, query, body, fault)
        except ApiError as exc:
            self._send_json(exc.code, exc.status())
        except _Abort:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a bug in the emulator: answer like the API server would
            self.log_error("internal error on %s %s: %r", method, path, exc)
            self._send_json(500, status_body(500, "InternalError", f"internal error: {exc!r}"))

    def _route(
        self, method: str, path: str, query: dict[str, str], body: bytes, fault: Fault | None
    ) -> None:
        emulator = self.server.emulator
        if path in ("/healthz", "/livez", "/readyz"):
            self._send(200, b"ok", "text/plain")
            return
        is_discovery = path in ("/version", "/api", "/apis") or re.fullmatch(
            r"/api/[^/]+|/apis/[^/]+(/[^/]+)?", path
        )
        if is_discovery and method != "GET":
            raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed on {path}")
        if path == "/version":
            self._send_json(200, emulator.version_info())
            return
        if path.startswith("/openapi/"):
            if method != "GET":
                raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed on {path}")
            document = openapi_document(path)
            if document is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            self._send_json(200, document)
            return
        if path == "/api":
            host = f"{emulator.host}:{emulator.port}"
            server_addresses = [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}]
            self._send_json(
                200,
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": server_addresses,
                },
            )
            return
        if path == "/apis":
            self._send_json(200, api_group_list())
            return
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 2:
            group = parts[1]
            if len(parts) == 2:
                doc = api_group(group)
                if doc is None:
                    raise ApiError(
                        404, "NotFound", "the server could not find the requested resource"
                    )
                self._send_json(200, doc)
                return
            version, rest = parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            doc = api_resource_list(group, version)
            if doc is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            self._send_json(200, doc)
            return
        namespace: str | None = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            candidate = RESOURCES.get((group, rest[2]))
            if candidate is not None and candidate.namespaced:
                namespace, rest = rest[1], rest[2:]
        resource = RESOURCES.get((group, rest[0]))
        if resource is None or resource.version != version or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if resource.namespaced and namespace is None and len(rest) > 1:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        subresource = rest[2] if len(rest) > 2 else None
        if subresource is not None and (subresource != "status" or not resource.status_subresource):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if name is None:
            self._collection(method, resource, namespace, query, body, fault)
        else:
            self._item(method, resource, namespace, name, subresource, query, body)

    # -- collections ------------------------------------------------------------------------

    def _selectors(self, resource: Resource, query: dict[str, str]) -> tuple[Any, Any]:
        try:
            return (
                parse_label_selector(query.get("labelSelector")),
                parse_field_selector(query.get("fieldSelector"), resource.supports_field),
            )
        except SelectorError as exc:
            raise ApiError.bad_request(str(exc)) from exc

    def _collection(
        self,
        method: str,
        resource: Resource,
        namespace: str | None,
        query: dict[str, str],
        body: bytes,
        fault: Fault | None,
    ) -> None:
        store = self.server.emulator.store
        if method == "POST":
            entry = store.create(
                resource, namespace, _parse_json(body), field_manager=query.get("fieldManager")
            )
            self._send(201, entry.full())
            return
        if method not in ("GET", "DELETE"):
            raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed on a collection")
        matchers = self._selectors(resource, query)
        if method == "DELETE":
            if namespace is None and resource.namespaced:
                raise ApiError(405, "MethodNotAllowed", "deletecollection needs a namespace")
            result = store.list_objects(
                resource,
                namespace,
                matchers,
                (query.get("labelSelector", ""), query.get("fieldSelector", "")),
            )
            for entry in result.entries:
                with contextlib.suppress(ApiError):
                    store.delete(resource, namespace, entry.key[1])
            self._send_list(resource, result.entries, result.rv, None, None)
            return
        if query.get("watch") in ("true", "1"):
            self._watch(resource, namespace, query, matchers, fault)
            return
        try:
            limit = int(query.get("limit") or 0)
        except ValueError as exc:
            raise ApiError.bad_request("limit must be an integer") from exc
        result = store.list_objects(
            resource,
            namespace,
            matchers,
            (query.get("labelSelector", ""), query.get("fieldSelector", "")),
            limit=limit,
            continue_=query.get("continue") or None,
            resource_version=query.get("resourceVersion", ""),
            resource_version_match=query.get("resourceVersionMatch", ""),
        )
        remaining = result.remaining
        if query.get("labelSelector") or query.get("fieldSelector"):
            remaining = None  # the real server only counts when nothing is filtered
        self._send_list(resource, result.entries, result.rv, result.continue_, remaining)

    def _send_list(
        self,
        resource: Resource,
        entries: list[Entry],
        rv: int,
        continue_: str | None,
        remaining: int | None,
    ) -> None:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if continue_:
            meta["continue"] = continue_
        if remaining is not None:
            meta["remainingItemCount"] = remaining
        head = (
            f'{{"apiVersion":"{resource.api_version}","kind":"{resource.list_kind}",'
            f'"metadata":{json.dumps(meta, separators=(",", ":"))},"items":['
        ).encode()
        self._send(200, head + b",".join(e.raw for e in entries) + b"]}")

    # -- watch ------------------------------------------------------------------------------

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _bookmark(self, resource: Resource, rv: int, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": meta}
        return dumps({"type": "BOOKMARK", "object": obj}) + b"\n"

    def _watch(
        self,
        resource: Resource,
        namespace: str | None,
        query: dict[str, str],
        matchers: tuple[Any, Any],
        fault: Fault | None,
    ) -> None:
        emulator = self.server.emulator
        store = emulator.store
        rv_param = query.get("resourceVersion", "")
        if rv_param not in ("", "0") and not rv_param.isdigit():
            raise ApiError.bad_request(f"invalid resource version {rv_param!r}")
        try:
            timeout = float(query.get("timeoutSeconds") or _DEFAULT_WATCH_TIMEOUT)
        except ValueError as exc:
            raise ApiError.bad_request("timeoutSeconds must be a number") from exc
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        send_initial = query.get("sendInitialEvents") == "true" or rv_param in ("", "0")
        deadline = time.monotonic() + timeout
        label_match, field_match = matchers

        def selected(entry: Entry) -> bool:
            if namespace is not None and entry.key[0] != namespace:
                return False
            return (label_match is None or label_match(entry.obj)) and (
                field_match is None or field_match(entry.obj)
            )

        if send_initial:
            initial, pos, epoch = store.initial_state(resource, namespace, matchers)
        else:
            initial, pos, epoch = [], int(rv_param), store.watch_epoch
        budget = fault.after_events if fault is not None and fault.action == "drop" else None

        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        emulator._watch_started()
        try:
            if budget == 0:
                raise _Abort
            for start in range(0, len(initial), 500):
                batch = initial[start : start + 500]
                if budget is not None:
                    batch = batch[:budget]
                    budget -= len(batch)
                self._chunk(b"".join(b'{"type":"ADDED","object":%s}\n' % e.full() for e in batch))
                if budget == 0:
                    raise _Abort
            if query.get("sendInitialEvents") == "true" and bookmarks:
                self._chunk(self._bookmark(resource, pos, initial_end=True))
            next_bookmark = time.monotonic() + emulator.bookmark_interval
            while True:
                now = time.monotonic()
                if now >= deadline:
                    break
                wait = min(deadline, next_bookmark if bookmarks else deadline) - now
                try:
                    events = store.next_events(pos, wait, epoch)
                except ApiError as exc:  # 410: the watch's start is older than compaction
                    self._chunk(dumps({"type": "ERROR", "object": exc.status()}) + b"\n")
                    break
                out: list[bytes] = []
                for event in events:
                    pos = event.entry.rv
                    if event.entry.resource is not resource:
                        continue
                    now_in = selected(event.entry)
                    was_in = event.prev is not None and selected(event.prev)
                    if event.type == "MODIFIED" and now_in != was_in:
                        out.append(event.encode("ADDED" if now_in else "DELETED"))
                    elif now_in:
                        out.append(event.encode())
                    if budget is not None and len(out) >= budget:
                        self._chunk(b"".join(out))
                        raise _Abort
                self._chunk(b"".join(out))
                if budget is not None:
                    budget -= len(out)
                # A watch from a resourceVersion this server has not reached gets no
                # bookmarks (kube-apiserver 1.36 keeps such a watch open and silent).
                if bookmarks and time.monotonic() >= next_bookmark and pos <= store.rv:
                    self._chunk(self._bookmark(resource, pos))
                    next_bookmark = time.monotonic() + emulator.bookmark_interval
            if bookmarks and pos <= store.rv:
                self._chunk(self._bookmark(resource, pos))
            self.wfile.write(b"0\r\n\r\n")
        except WatchClosed as exc:
            if exc.clean:
                with contextlib.suppress(OSError):
                    self.wfile.write(b"0\r\n\r\n")
            else:
                raise _Abort from exc
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            emulator._watch_ended()

    # -- single objects ---------------------------------------------------------------------

    def _item(
        self,
        method: str,
        resource: Resource,
        namespace: str | None,
        name: str,
        subresource: str | None,
        query: dict[str, str],
        body: bytes,
    ) -> None:
        store = self.server.emulator.store
        manager = query.get("fieldManager")
        if method == "GET":
            self._send(200, store.get(resource, namespace, name).full())
        elif method == "PUT":
            entry = store.replace(
                resource,
                namespace,
                name,
                _parse_json(body),
                subresource=subresource,
                field_manager=manager,
            )
            self._send(200, entry.full())
        elif method == "PATCH":
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            patch_type = _PATCH_TYPES.get(content_type)
            if patch_type is None:
                raise ApiError(
                    415,
                    "UnsupportedMediaType",
                    f"the body of the request was in an unknown "
                    f"format - accepted media types include: {', '.join(_PATCH_TYPES)}",
                )
            patch = _parse_yaml(body) if patch_type == "apply" else _parse_json(body)
            entry, created = store.patch(
                resource,
                namespace,
                name,
                patch_type,
                patch,
                subresource=subresource,
                field_manager=manager,
            )
            self._send(201 if created else 200, entry.full())
        elif method == "DELETE" and subresource is None:
            options = _parse_json(body) if body.strip() else {}
            entry, gone = store.delete(
                resource, namespace, name, (options or {}).get("preconditions")
            )
            if gone:
                details = {
                    "name": name,
                    "group": resource.group,
                    "kind": resource.plural,
                    "uid": entry.obj["metadata"].get("uid"),
                }
                self._send_json(200, status_body(200, "", "", details))
            else:
                self._send(200, entry.full())
        else:
            raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed here")

    # -- control endpoint -------------------------------------------------------------------

    def _control(self, method: str, path: str, body: bytes) -> None:
        emulator = self.server.emulator
        action = path.removeprefix("/_emulator/")
        if action == "state" and method == "GET":
            self._send_json(200, emulator.state())
        elif action == "compact" and method == "POST":
            self._send_json(200, {"compactedResourceVersion": str(emulator.compact())})
        elif action == "replace-cluster" and method == "POST":
            options = _parse_json(body) if body.strip() else {}
            start = (options or {}).get("resourceVersion")
            uid = emulator.replace_cluster(resource_version=int(start) if start else None)
            self._send_json(200, {"clusterUID": uid, "resourceVersion": str(emulator.store.rv)})
        elif action == "close-watches" and method == "POST":
            self._send_json(200, {"closed": emulator.close_watches()})
        elif action == "faults" and method == "GET":
            self._send_json(200, {"faults": [asdict(f) for f in emulator.faults()]})
        elif action == "faults" and method == "DELETE":
            emulator.clear_faults()
            self._send_json(200, {"faults": []})
        elif action == "faults" and method == "POST":
            spec = _parse_json(body)
            specs = spec if isinstance(spec, list) else [spec]
            try:
                for item in specs:
                    emulator.add_fault(Fault(**_snake_keys(item)))
            except TypeError as exc:
                raise ApiError.bad_request(f"invalid fault: {exc}") from exc
            self._send_json(200, {"faults": [asdict(f) for f in emulator.faults()]})
        elif action == "load" and method == "POST":
            data = _parse_json(body)
            items = data.get("items", []) if isinstance(data, dict) else data
            try:
                count = emulator.load(items)
            except (ValueError, ApiError) as exc:
                raise ApiError.bad_request(str(exc)) from exc
            self._send_json(200, {"loaded": count})
        else:
            raise ApiError(404, "NotFound", f"no emulator control {method} {path}")


def _snake_keys(item: Any) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ApiError.bad_request("a fault must be a JSON object")
    return {re.sub(r"(?<!^)([A-Z])", r"_\1", k).lower(): v for k, v in item.items()}


def _parse_json(body: bytes) -> Any:
    if body[:1] not in (b"{", b"[", b" ", b"\n", b"\t", b"\r", b"n", b""):
        raise ApiError(
            415,
            "UnsupportedMediaType",
            "the emulator only accepts JSON bodies (protobuf and CBOR are not supported)",
        )
    try:
        return json.loads(body or b"null")
    except ValueError as exc:
        raise ApiError.bad_request(f"the body of the request is not valid JSON: {exc}") from exc


def _parse_yaml(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        pass
    try:
        return yaml.safe_load(body)
    except yaml.YAMLError as exc:
        raise ApiError.bad_request(f"the body of the request is not valid YAML: {exc}") from exc


class Emulator:
    """An in-process Kubernetes API server for tests and the demo.

    Use as a context manager (`with Emulator(port=0) as emu: emu.url`) or call `start()` and
    `stop()`. All methods are thread-safe.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        git_version: str = "v1.34.1",
        bookmark_interval: float = 10.0,
        history_limit: int | None = 500_000,
        require_namespaces: bool = True,
        system_namespaces: bool = True,
        initial_resource_version: int = 0,
        cluster_uid: str | None = None,
        verbose: bool = False,
    ) -> None:
        """``initial_resource_version`` starts the history there (a restarted cluster may
        start below what its clients saw); ``cluster_uid`` is the uid of ``kube-system``, the
        cluster's identity (random unless given; keep it to emulate the same cluster)."""
        self.host = host
        self.requested_port = port
        self.git_version = git_version
        self.bookmark_interval = bookmark_interval
        self.verbose = verbose
        self._history_limit = history_limit
        self._require_namespaces = require_namespaces
        self._system_namespaces = system_namespaces
        self._faults: list[Fault] = []
        self._faults_lock = threading.Lock()
        self._active_watches = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.store = self._new_store(initial_resource_version, cluster_uid)

    def _new_store(self, initial_resource_version: int, cluster_uid: str | None) -> Store:
        store = Store(
            history_limit=self._history_limit,
            require_namespaces=self._require_namespaces,
            initial_resource_version=initial_resource_version,
        )
        if self._system_namespaces:
            for name in _SYSTEM_NAMESPACES:
                meta = {"name": name}
                if name == "kube-system":
                    meta["uid"] = cluster_uid or str(uuid.uuid4())
                store.create(by_kind["Namespace"], None, {"metadata": meta}, keep_identity=True)
        return store

    @property
    def cluster_uid(self) -> str:
        """The uid of the ``kube-system`` namespace: what clients take as the cluster's
        identity ("" without system namespaces)."""
        try:
            entry = self.store.get(by_kind["Namespace"], None, "kube-system")
        except ApiError:
            return ""
        return str(entry.obj["metadata"].get("uid") or "")

    def replace_cluster(
        self, *, resource_version: int | None = None, cluster_uid: str | None = None
    ) -> str:
        """Emulates another cluster behind the same address: every object and all history
        go, ``kube-system`` gets a new uid, open watches end abruptly. Its history starts at
        ``resource_version`` (default: where this one was). Returns the new cluster's uid."""
        old = self.store
        start = old.rv if resource_version is None else resource_version
        self.store = self._new_store(start, cluster_uid)
        old.close_watches()
        return self.cluster_uid

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> Emulator:
        if self._server is None:
            self._server = _Server((self.host, self.requested_port), self)
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.02},
                name=f"apiemulator:{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: end every watch stream, close connections, join handler threads."""
        server, self._server = self._server, None
        if server is None:
            return
        self.store.close()
        server.shutdown()
        server.close_connections()
        server.join_threads(5.0)
        server.server_close()
        if self._thread is not None:
            self._thread.join(5.0)

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            return self.requested_port
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def kubeconfig(self, path: str | Path, *, namespace: str = "default") -> Path:
        """Write a kubeconfig (context "emulator", plain http, no credentials) and return it."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "emulator", "cluster": {"server": self.url}}],
            "users": [{"name": "emulator", "user": {}}],
            "contexts": [
                {
                    "name": "emulator",
                    "context": {"cluster": "emulator", "user": "emulator", "namespace": namespace},
                }
            ],
            "current-context": "emulator",
            "preferences": {},
        }
        target = Path(path)
        target.write_text(yaml.safe_dump(config, sort_keys=False))
        return target

    def version_info(self) -> dict[str, str]:
        match = re.match(r"v?(\d+)\.(\d+)", self.git_version)
        major, minor = match.groups() if match else ("1", "34")
        return {
            "major": major,
            "minor": minor,
            "gitVersion": self.git_version,
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2025-09-09T00:00:00Z",
            "goVersion": "go1.24.6",
            "compiler": "gc",
            "platform": "linux/amd64",
        }

    # -- data -------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        return self.store.rv

    def load(
        self,
        objects: Iterable[dict[str, Any]],
        *,
        create_namespaces: bool = True,
        create_nodes: bool = True,
        copy_objects: bool = True,
    ) -> int:
        """Create (or replace) objects, keeping their uid, timestamps and status.

        Missing namespaces are created, and so are the Nodes ResourceSlices run on. A loaded
        `kube-system` namespace keeps this emulator's uid: the identity is the emulator's.
        Returns the number of objects given (created namespaces and nodes not counted).
        `copy_objects=False` lets the store own (and modify) the given dicts.
        """
        identity = self.cluster_uid

        def keep_identity(obj: dict[str, Any]) -> dict[str, Any]:
            meta = obj.get("metadata") or {}
            if identity and obj.get("kind") == "Namespace" and meta.get("name") == "kube-system":
                return {**obj, "metadata": {**meta, "uid": identity}}
            return obj

        return self.store.load(
            (keep_identity(obj) for obj in objects),
            create_namespaces=create_namespaces,
            create_nodes=create_nodes,
            copy_objects=copy_objects,
        )

    def load_files(self, *paths: str | Path | Iterable[str | Path]) -> int:
        """Load kubectl `List` JSON (or YAML) files; a directory loads its *.json/*.yaml."""
        files: list[Path] = []
        for item in paths:
            for p in [item] if isinstance(item, str | Path) else item:
                p = Path(p)
                if p.is_dir():
                    files.extend(
                        sorted(f for f in p.iterdir() if f.suffix in (".json", ".yaml", ".yml"))
                    )
                else:
                    files.append(p)
        objects: list[dict[str, Any]] = []
        for f in files:
            text = f.read_text()
            docs = [json.loads(text)] if f.suffix == ".json" else list(yaml.safe_load_all(text))
            for doc in docs:
                if isinstance(doc, dict) and doc.get("kind", "").endswith("List"):
                    objects.extend(doc.get("items") or [])
                elif doc:
                    objects.append(doc)
        return self.load(objects, copy_objects=False)

    def objects(self, kind: str) -> list[dict[str, Any]]:
        """Copies of the stored objects of one kind (e.g. "ResourceClaim")."""
        return self.store.dump(by_kind[kind])

    def state(self) -> dict[str, Any]:
        return {
            "clusterUID": self.cluster_uid,
            "resourceVersion": str(self.store.rv),
            "compactedResourceVersion": str(self.store.compacted_rv),
            "activeWatches": self._active_watches,
            "counts": {r.plural: self.store.count(r) for r in RESOURCES.values()},
        }

    # -- fault injection --------------------------------------------------------------------

    def compact(self) -> int:
        """Forget history up to now; older watches get ERROR 410, older continues HTTP 410."""
        return self.store.compact()

    def close_watches(self) -> int:
        """End every active watch stream abruptly (no terminating chunk)."""
        count = self._active_watches
        self.store.close_watches()
        return count

    def add_fault(self, fault: Fault) -> None:
        if fault.action not in ("error", "drop", "latency"):
            raise ValueError(f"unknown fault action {fault.action!r}")
        with self._faults_lock:
            self._faults.append(fault)

    def fail_next(
        self,
        count: int = 1,
        *,
        status: int = 500,
        path: str | None = None,
        method: str | None = None,
    ) -> None:
        """Answer the next `count` matching requests with `status` and a Status body."""
        self.add_fault(Fault("error", count, path, method, status=status))

    def drop_next(
        self,
        count: int = 1,
        *,
        path: str | None = None,
        method: str | None = None,
        after_events: int = 0,
    ) -> None:
        """Close the connection of the next `count` matching requests without an answer."""
        self.add_fault(Fault("drop", count, path, method, after_events=after_events))

    def add_latency(
        self,
        seconds: float,
        *,
        count: int | None = None,
        path: str | None = None,
        method: str | None = None,
    ) -> None:
        """Delay matching requests by `seconds` (all of them until cleared when count=None)."""
        self.add_fault(Fault("latency", count, path, method, seconds=seconds))

    def clear_faults(self) -> None:
        with self._faults_lock:
            self._faults.clear()

    def faults(self) -> list[Fault]:
        with self._faults_lock:
            return list(self._faults)

    def _take_fault(self, method: str, path: str) -> Fault | None:
        delay = 0.0
        chosen: Fault | None = None
        with self._faults_lock:
            for fault in list(self._faults):
                if not fault.matches(method, path):
                    continue
                if fault.action == "latency":
                    delay += fault.seconds
                elif chosen is None:
                    chosen = fault
                else:
                    continue
                if fault.count is not None:
                    fault.count -= 1
                    if fault.count <= 0:
                        self._faults.remove(fault)
        if delay:
            time.sleep(delay)
        return chosen

    def _watch_started(self) -> None:
        with self._faults_lock:
            self._active_watches += 1

    def _watch_ended(self) -> None:
        with self._faults_lock:
            self._active_watches -= 1
