"""The emulator's HTTP front: routing, list and watch streaming, answers and refusals as
kube-apiserver gives them."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict
from http.server import ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlsplit

from .bodies import drop_unknown_fields, parse_json, parse_yaml, snake_keys, validate_list_options
from .credentials import authenticate
from .errors import ApiError, status_body
from .faults import Fault
from .negotiation import Conversion, convert_list, convert_object, negotiate
from .openapi import openapi_document
from .resources import (
    RESOURCES,
    Resource,
    api_group,
    api_group_list,
    api_resource_list,
)
from .selectors import SelectorError, parse_field_selector, parse_label_selector
from .store import Entry, Store, dumps
from .watch import Abort, Watching


class Emulator(Protocol):
    """What the HTTP front needs of the emulator that owns it (``server.Emulator``)."""

    host: str
    bookmark_interval: float
    verbose: bool
    store: Store
    tokens: frozenset[str] | None

    @property
    def port(self) -> int: ...
    def version_info(self) -> dict[str, str]: ...
    def load(self, objects: Iterable[dict[str, Any]]) -> int: ...
    def state(self) -> dict[str, Any]: ...
    def compact(self) -> int: ...
    def close_watches(self) -> int: ...
    def add_fault(self, fault: Fault) -> None: ...
    def clear_faults(self) -> None: ...
    def faults(self) -> list[Fault]: ...
    def replace_cluster(
        self, *, resource_version: int | None = None, cluster_uid: str | None = None
    ) -> str: ...
    def restart(self, *, keep: socket.socket | None = None) -> int: ...
    def _take_fault(self, method: str, path: str) -> Fault | None: ...
    def _watch_started(self) -> None: ...
    def _watch_ended(self) -> None: ...


__all__ = ["Handler", "Server"]

_PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/json-patch+json": "json",
    "application/apply-patch+yaml": "apply",
}
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


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    emulator: Emulator

    def __init__(self, address: tuple[str, int], emulator: Emulator) -> None:
        self.emulator = emulator
        self.connections: set[socket.socket] = set()
        self.threads: set[threading.Thread] = set()
        self.conn_lock = threading.Lock()
        # Serving TLS when set (read for each new connection, so it can be swapped).
        self.tls: ssl.SSLContext | None = None
        super().__init__(address, Handler)

    def get_request(self) -> tuple[Any, Any]:
        request, client_address = super().get_request()
        tls = self.tls
        if tls is not None:  # the handshake runs in the connection's own thread
            request = tls.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
        return request, client_address

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self.conn_lock:
            self.connections.add(request)
            self.threads.add(threading.current_thread())
        try:
            if isinstance(request, ssl.SSLSocket):
                try:
                    request.settimeout(10)
                    request.do_handshake()
                    request.settimeout(None)
                except (ssl.SSLError, OSError):  # e.g. a client that does not trust our CA
                    self.shutdown_request(request)
                    return
            super().process_request_thread(request, client_address)
        finally:
            with self.conn_lock:
                self.connections.discard(request)
                self.threads.discard(threading.current_thread())

    def close_connections(self, keep: socket.socket | None = None) -> None:
        with self.conn_lock:
            connections = [c for c in self.connections if c is not keep]
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def join_threads(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self.conn_lock:
            threads = list(self.threads)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


class Handler(Watching):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: Server

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

    def _send(
        self,
        code: int,
        body: bytes,
        content_type: str = "application/json",
        warnings: Iterable[str] = (),
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        for warning in warnings:
            self.send_header("Warning", warning)
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
            authenticate(self.headers.get("Authorization"), emulator.tokens, method, path)
            fault = emulator._take_fault(method, path)
            if fault is not None and fault.action == "error":
                reason = _REASONS.get(fault.status, "InternalError")
                raise ApiError(fault.status, reason, f"injected fault: {fault.status}")
            is_watch = query.get("watch") in ("true", "1")
            if fault is not None and fault.action == "drop" and not is_watch:
                raise Abort
            self._route(method, path, query, body, fault)
        except ApiError as exc:
            self._send_json(exc.code, exc.status())
        except Abort:
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
        if is_discovery and path != "/version":
            negotiate(self.headers.get("Accept"), convertible=False)
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
        served = (subresource == "status" and resource.status_subresource) or (
            subresource == "binding" and resource.binding_subresource
        )
        if subresource is not None and not served:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        # Like kube-apiserver, settle the answer's shape (406) before doing anything.
        watch = name is None and query.get("watch") in ("true", "1")
        conversion = negotiate(self.headers.get("Accept"), watch=watch)
        if name is None:
            self._collection(method, resource, namespace, query, body, fault, conversion)
        else:
            self._item(method, resource, namespace, name, subresource, query, body, conversion)

    def _send_entry(
        self,
        code: int,
        entry: Entry,
        conversion: Conversion | None,
        query: dict[str, str],
        warnings: Iterable[str] = (),
    ) -> None:
        """One object, as stored or converted as the request's `Accept` asked."""
        if conversion is None:
            self._send(code, entry.full(), warnings=warnings)
            return
        converted = convert_object(entry.resource, entry.obj, conversion, query)
        self._send(code, dumps(converted), warnings=warnings)

    # -- collections ------------------------------------------------------------------------

    def _selectors(self, resource: Resource, query: dict[str, str]) -> tuple[Any, Any]:
        try:
            return (
                parse_label_selector(query.get("labelSelector")),
                parse_field_selector(query.get("fieldSelector"), resource.field_selector_error),
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
        conversion: Conversion | None,
    ) -> None:
        store = self.server.emulator.store
        if method == "POST":
            obj = parse_json(body)
            warnings = drop_unknown_fields(resource, obj, query)
            entry = store.create(resource, namespace, obj, field_manager=query.get("fieldManager"))
            self._send_entry(201, entry, conversion, query, warnings)
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
            self._send_list(resource, result.entries, result.rv, None, None, conversion, query)
            return
        if query.get("watch") in ("true", "1"):
            self._watch(resource, namespace, query, matchers, fault, conversion)
            return
        validate_list_options(query)
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
        self._send_list(
            resource, result.entries, result.rv, result.continue_, remaining, conversion, query
        )

    def _send_list(
        self,
        resource: Resource,
        entries: list[Entry],
        rv: int,
        continue_: str | None,
        remaining: int | None,
        conversion: Conversion | None,
        query: dict[str, str],
    ) -> None:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if continue_:
            meta["continue"] = continue_
        if remaining is not None:
            meta["remainingItemCount"] = remaining
        if conversion is not None:
            converted = convert_list(resource, [e.obj for e in entries], meta, conversion, query)
            self._send_json(200, converted)
            return
        head = (
            f'{{"apiVersion":"{resource.api_version}","kind":"{resource.list_kind}",'
            f'"metadata":{json.dumps(meta, separators=(",", ":"))},"items":['
        ).encode()
        self._send(200, head + b",".join(e.raw for e in entries) + b"]}")

    # -- watch ------------------------------------------------------------------------------

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
        conversion: Conversion | None,
    ) -> None:
        store = self.server.emulator.store
        manager = query.get("fieldManager")
        if subresource == "binding":
            if method != "POST":
                raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed on a binding")
            store.bind(resource, namespace, name, parse_json(body))
            self._send_json(201, status_body(201, "", ""))
        elif method == "GET":
            self._send_entry(200, store.get(resource, namespace, name), conversion, query)
        elif method == "PUT":
            obj = parse_json(body)
            warnings = drop_unknown_fields(resource, obj, query)
            entry = store.replace(
                resource, namespace, name, obj, subresource=subresource, field_manager=manager
            )
            self._send_entry(200, entry, conversion, query, warnings)
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
            patch = parse_yaml(body) if patch_type == "apply" else parse_json(body)
            warnings = [] if patch_type == "json" else drop_unknown_fields(resource, patch, query)
            entry, created = store.patch(
                resource,
                namespace,
                name,
                patch_type,
                patch,
                subresource=subresource,
                field_manager=manager,
                force=query.get("force") in ("true", "1"),
            )
            self._send_entry(201 if created else 200, entry, conversion, query, warnings)
        elif method == "DELETE" and subresource is None:
            options = parse_json(body) if body.strip() else {}
            entry, gone = store.delete(
                resource, namespace, name, (options or {}).get("preconditions")
            )
            if gone and not resource.return_deleted_object:
                details = {
                    "name": name,
                    "group": resource.group,
                    "kind": resource.plural,
                    "uid": entry.obj["metadata"].get("uid"),
                }
                self._send_json(200, status_body(200, "", "", details))
            else:
                self._send_entry(200, entry, conversion, query)
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
            options = parse_json(body) if body.strip() else {}
            start = (options or {}).get("resourceVersion")
            uid = emulator.replace_cluster(resource_version=int(start) if start else None)
            self._send_json(200, {"clusterUID": uid, "resourceVersion": str(emulator.store.rv)})
        elif action == "restart" and method == "POST":
            version = emulator.restart(keep=self.connection)
            self._send_json(200, {"resourceVersion": str(version)})
        elif action == "close-watches" and method == "POST":
            self._send_json(200, {"closed": emulator.close_watches()})
        elif action == "faults" and method == "GET":
            self._send_json(200, {"faults": [asdict(f) for f in emulator.faults()]})
        elif action == "faults" and method == "DELETE":
            emulator.clear_faults()
            self._send_json(200, {"faults": []})
        elif action == "faults" and method == "POST":
            spec = parse_json(body)
            specs = spec if isinstance(spec, list) else [spec]
            try:
                for item in specs:
                    emulator.add_fault(Fault(**snake_keys(item)))
            except TypeError as exc:
                raise ApiError.bad_request(f"invalid fault: {exc}") from exc
            self._send_json(200, {"faults": [asdict(f) for f in emulator.faults()]})
        elif action == "load" and method == "POST":
            data = parse_json(body)
            items = data.get("items", []) if isinstance(data, dict) else data
            try:
                count = emulator.load(items)
            except (ValueError, ApiError) as exc:
                raise ApiError.bad_request(str(exc)) from exc
            self._send_json(200, {"loaded": count})
        else:
            raise ApiError(404, "NotFound", f"no emulator control {method} {path}")
