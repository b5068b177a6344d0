"""The one module that talks to the Kubernetes API (STYLE §8, DESIGN §3).

Everything goes through the `kubernetes` client's `ApiClient` (configuration, authentication,
TLS, connection pool) but reads and writes **raw JSON**: dict bodies in, the response bytes
decoded (with msgspec) out. The generated per-kind methods of `ResourceV1Api`/`CoreV1Api` are
not used: in 37.x they validate bodies against pydantic models that forbid unknown fields
(`create_namespaced_resource_claim` rejects a newer field with `extra_forbidden`), and the mirror
must keep every field. Watches are parsed line by line from the streamed response (not
`kubernetes.watch.Watch`, which mishandles ERROR events without deserialization).

Writes send `fieldValidation=Strict` (`ClusterConfig.field_validation`): a field the server does
not know fails the write instead of being dropped silently; other warnings are logged.

Failures become our exceptions: `NotFound`, `AlreadyExists`, `Conflict` (with
`FieldManagerConflict`: server-side apply met another manager's field), `Gone` (410: relist),
`Unavailable` (429, 5xx: back off and retry) with its kinds `Unreachable` (no answer at all:
refused, reset, timed out; `TLSFailure`: no trusted answer) and `ResourceVersionTooLarge` (the
server has not reached the resourceVersion asked for), `Invalid`, `Forbidden` (with
`Unauthorized`: the credentials were refused), all subclasses of `ClusterError`.

Credentials and CAs rotate, and a control plane may come back with a new CA: when the server
refuses the credentials (401) or the TLS handshake fails, the client reads its configuration
again (kubeconfig, in-cluster token and CA files) and, if that changed, sends the request once
more with it (`Cluster._send`), so a long-lived client (a watcher's) recovers on its next
request rather than when it is made again.
"""

from __future__ import annotations

import copy
import logging
import ssl
import threading
from collections.abc import Iterator
from typing import Any, Self

import msgspec
import urllib3
from kubernetes import client as k8s_client

from kube.config import ClusterConfig, ClusterVersion, configure, credentials_of, parse_version
from kube.errors import (
    ClusterError,
    Forbidden,
    Invalid,
    NotFound,
    TLSFailure,
    Unauthorized,
    Unavailable,
    Unreachable,
    error_class,
    error_for,
)
from kube.kinds import KINDS, Kind

__all__ = ["FIELD_MANAGER", "METADATA_LIST", "Cluster"]

logger = logging.getLogger(__name__)

FIELD_MANAGER = "dra-portal"
# What a client sends for a metadata-only list, falling back to the full list on a server that
# cannot convert (kube-apiserver, like the emulator, serves the first it can).
METADATA_LIST = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
_PATCH_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}


def _is_tls_failure(error: BaseException) -> bool:
    """A failed TLS handshake, as urllib3 reports it (directly, or as the reason it gave up)."""
    reason = getattr(error, "reason", None)
    return any(
        isinstance(item, urllib3.exceptions.SSLError | ssl.SSLError) for item in (error, reason)
    )


# -- the client ----------------------------------------------------------------------------


class Cluster:
    """Raw-JSON access to one cluster. Thread-safe (one connection pool per instance)."""

    def __init__(self, config: ClusterConfig | None = None) -> None:
        self.config = config or ClusterConfig()
        self.name = self.config.name
        configuration = configure(self.config)
        self._api = k8s_client.ApiClient(configuration)
        self._credentials = credentials_of(configuration)
        self._renewing = threading.Lock()

    def close(self) -> None:
        self._api.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport -------------------------------------------------------------------------

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        read_timeout: float | None = None,
        accept: str = "application/json",
    ) -> urllib3.BaseHTTPResponse:
        """Send one request; returns the unread response (status already checked).

        Refused credentials (401) or a failed TLS handshake make it read the configuration
        again and, when that changed, send the request once more with it. Neither failure let
        the request reach the API server's handlers, so no write is ever applied twice.
        """
        api = self._api
        try:
            return self._send_with(
                api, method, path, query, body, content_type, read_timeout, accept
            )
        except (Unauthorized, TLSFailure):
            if not self._renew(api):
                raise
        return self._send_with(
            self._api, method, path, query, body, content_type, read_timeout, accept
        )

    def _renew(self, refused: k8s_client.ApiClient) -> bool:
        """Reads the configuration again after ``refused`` met refused credentials or a failed
        handshake; True when a client with other credentials is now in place (made here or, a
        moment ago, by another thread)."""
        with self._renewing:
            if self._api is not refused:
                return True
            try:
                configuration = configure(self.config)
            except ClusterError as error:
                logger.warning("cluster %s: %s", self.name, error)
                return False
            credentials = credentials_of(configuration)
            if credentials == self._credentials:
                return False
            logger.warning(
                "cluster %s: the server refused the credentials or the TLS handshake failed; "
                "the configuration changed since it was read: using the new one",
                self.name,
            )
            self._api, self._credentials = k8s_client.ApiClient(configuration), credentials
        refused.close()
        return True

    def _send_with(
        self,
        api: k8s_client.ApiClient,
        method: str,
        path: str,
        query: list[tuple[str, str]] | None,
        body: Any,
        content_type: str,
        read_timeout: float | None,
        accept: str = "application/json",
    ) -> urllib3.BaseHTTPResponse:
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            method, url, headers, body, _ = api.param_serialize(
                method=method,
                resource_path=path,
                query_params=query or [],
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            rest = api.call_api(
                method,
                url,
                header_params=headers,
                body=body,
                _request_timeout=(
                    self.config.connect_timeout,
                    read_timeout or self.config.read_timeout,
                ),
            )
        except k8s_client.ApiException as exc:  # raised by the client for TLS failures
            if exc.status == 0 and str(exc.reason).startswith("SSLError"):
                raise TLSFailure(f"{method} {path}: {exc.reason}") from exc
            raise ClusterError(f"{method} {path}: {exc.reason}", code=exc.status) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            if _is_tls_failure(exc):
                raise TLSFailure(f"{method} {path}: {exc}") from exc
            raise Unreachable(f"{method} {path}: {exc}") from exc
        response: urllib3.BaseHTTPResponse = rest.response
        if not 200 <= response.status < 300:
            try:
                data = response.data
            except (urllib3.exceptions.HTTPError, OSError):
                data = b""
            finally:
                response.release_conn()
            raise error_for(response.status, data)
        for warning in response.headers.getlist("Warning") if method != "GET" else ():
            logger.warning("%s %s: the API server warns: %s", method, path, warning)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = self._send(method, path, **kwargs)
        try:
            data = response.data
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Unavailable(f"{method} {path}: {exc}") from exc
        finally:
            response.release_conn()
        try:
            result = _decode(data)
        except (ValueError, RecursionError) as exc:
            raise ClusterError(f"{method} {path}: the response is not JSON") from exc
        if not isinstance(result, dict):
            raise ClusterError(f"{method} {path}: the response is not a JSON object")
        return result

    def _write_query(self) -> list[tuple[str, str]]:
        validation = self.config.field_validation
        return [("fieldValidation", validation)] if validation else []

    @staticmethod
    def _target(kind: Kind, body: dict[str, Any], namespace: str | None) -> tuple[str, str | None]:
        info = KINDS[kind]
        meta = body.get("metadata") or {}
        name = meta.get("name")
        if not name:
            raise Invalid(f"{info.kind} body has no metadata.name")
        namespace = namespace or meta.get("namespace")
        if info.namespaced and not namespace:
            raise Invalid(f"{info.kind} {name!r} needs a namespace")
        return name, namespace if info.namespaced else None

    # -- reads -----------------------------------------------------------------------------

    def version(self) -> ClusterVersion:
        return parse_version(self._json("GET", "/version"))

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> dict[str, Any]:
        return self._json("GET", KINDS[kind].path(namespace, name))

    def find(self, kind: Kind, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """:meth:`get`, or None when the object does not exist."""
        try:
            return self.get(kind, name, namespace)
        except NotFound:
            return None

    def identity(self) -> str:
        """The cluster's identity: the uid of its `kube-system` namespace, which lives as long
        as the cluster's etcd does. "" when it cannot be read (no such namespace, no RBAC)."""
        try:
            namespace = self.get(Kind.NAMESPACES, "kube-system")
        except (NotFound, Forbidden):
            return ""
        return str((namespace.get("metadata") or {}).get("uid") or "")

    def list_page(
        self,
        kind: Kind,
        *,
        namespace: str | None = None,
        limit: int = 500,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        """One page of a list, as the raw `<Kind>List` JSON (items lack apiVersion/kind).

        ``metadata_only``: a `meta.k8s.io/v1` `PartialObjectMetadataList` instead, whose items
        carry only their metadata (what kube-apiserver serves to controllers that compare uids
        and resourceVersions, a fraction of the bytes). Its continue tokens are those of the
        full list: the same page can be asked for again, whole.

        A continue token that is too old raises `Gone`: start the list again.
        """
        query: list[tuple[str, str]] = []
        if limit:
            query.append(("limit", str(limit)))
        if continue_:
            query.append(("continue", continue_))
        if resource_version is not None:
            query.append(("resourceVersion", resource_version))
        if resource_version_match:
            query.append(("resourceVersionMatch", resource_version_match))
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        accept = METADATA_LIST if metadata_only else "application/json"
        return self._json("GET", KINDS[kind].path(namespace), query=query, accept=accept)

    def list_all(
        self,
        kind: Kind,
        *,
        namespace: str | None = None,
        page_size: int = 500,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[dict[str, Any]], str]:
        """Every item (following continue tokens) and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        continue_: str | None = None
        while True:
            page = self.list_page(
                kind,
                namespace=namespace,
                limit=page_size,
                continue_=continue_,
                label_selector=label_selector,
                field_selector=field_selector,
            )
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            continue_ = meta.get("continue")
            if not continue_:
                return items, str(meta.get("resourceVersion") or "")

    def watch(
        self,
        kind: Kind,
        *,
        resource_version: str,
        timeout_seconds: int = 300,
        allow_bookmarks: bool = True,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Yield raw watch events `{"type": ..., "object": {...}}` until the server ends.

        ERROR events raise: code 410 as `Gone` (relist), others as the matching `ClusterError`.
        A dropped or stalled stream raises `Unavailable` (resume from the last resourceVersion).
        Closing the generator closes the connection.
        """
        query = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", str(int(timeout_seconds))),
        ]
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        path = KINDS[kind].path(namespace)
        response = self._send(
            "GET",
            path,
            query=query,
            read_timeout=timeout_seconds + self.config.watch_timeout_margin,
        )
        finished = False
        try:
            buffer = b""
            for chunk in response.stream(amt=None, decode_content=True):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield _watch_event(line)
            if buffer.strip():
                yield _watch_event(buffer)
            finished = True
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Unreachable(f"watch {path}: {exc}") from exc
        finally:
            if finished:
                response.release_conn()
            else:
                response.close()

    # -- writes ----------------------------------------------------------------------------

    def create(
        self, kind: Kind, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        """Create an object; `namespace` (when given) overrides the body's namespace."""
        info = KINDS[kind]
        metadata = dict(body.get("metadata") or {})
        if info.namespaced:
            namespace = namespace or metadata.get("namespace")
            if not namespace:
                raise Invalid(f"{info.kind} needs a namespace")
            metadata["namespace"] = namespace
        body = {"apiVersion": info.api_version, "kind": info.kind, **body, "metadata": metadata}
        return self._json("POST", info.path(namespace), query=self._write_query(), body=body)

    def replace(self, kind: Kind, body: dict[str, Any]) -> dict[str, Any]:
        """PUT the whole object; a stale metadata.resourceVersion raises `Conflict`."""
        info = KINDS[kind]
        name, namespace = self._target(kind, body, None)
        body = {"apiVersion": info.api_version, "kind": info.kind, **body}
        return self._json("PUT", info.path(namespace, name), query=self._write_query(), body=body)

    def replace_status(self, kind: Kind, body: dict[str, Any]) -> dict[str, Any]:
        info = KINDS[kind]
        name, namespace = self._target(kind, body, None)
        body = {"apiVersion": info.api_version, "kind": info.kind, **body}
        path = info.path(namespace, name, "status")
        return self._json("PUT", path, query=self._write_query(), body=body)

    def patch(
        self,
        kind: Kind,
        name: str,
        patch: dict[str, Any] | list[dict[str, Any]],
        *,
        namespace: str | None = None,
        patch_type: str = "merge",
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """Patch with `patch_type` "merge", "strategic", "json" (a list of operations)."""
        return self._patch(kind, name, patch, namespace, None, patch_type, field_manager, False)

    def patch_status(
        self,
        kind: Kind,
        name: str,
        patch: dict[str, Any] | list[dict[str, Any]],
        *,
        namespace: str | None = None,
        patch_type: str = "merge",
        field_manager: str | None = FIELD_MANAGER,
        force: bool = False,
    ) -> dict[str, Any]:
        """Patch the status subresource (e.g. write `status.allocation` of a claim)."""
        return self._patch(kind, name, patch, namespace, "status", patch_type, field_manager, force)

    def apply(
        self,
        kind: Kind,
        body: dict[str, Any],
        *,
        field_manager: str = FIELD_MANAGER,
        force: bool = False,
    ) -> dict[str, Any]:
        """Server-side apply: create the object if missing, else merge our fields into it."""
        info = KINDS[kind]
        name, namespace = self._target(kind, body, None)
        body = {"apiVersion": info.api_version, "kind": info.kind, **body}
        return self._patch(kind, name, body, namespace, None, "apply", field_manager, force)

    def _patch(
        self,
        kind: Kind,
        name: str,
        patch: Any,
        namespace: str | None,
        subresource: str | None,
        patch_type: str,
        field_manager: str | None,
        force: bool,
    ) -> dict[str, Any]:
        content_type = _PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"unknown patch type {patch_type!r}")
        if patch_type == "json" and not isinstance(patch, list):
            raise ValueError("a JSON patch is a list of operations")
        if patch_type == "apply" and not field_manager:
            raise ValueError("server-side apply needs a field manager")
        query = self._write_query()
        if field_manager:
            query.append(("fieldManager", field_manager))
        if force and patch_type == "apply":
            query.append(("force", "true"))
        path = KINDS[kind].path(namespace, name, subresource)
        return self._json(
            "PATCH", path, query=query, body=copy.deepcopy(patch), content_type=content_type
        )

    def bind_pod(self, name: str, namespace: str, node_name: str, *, uid: str = "") -> None:
        """Assign a pod to a node through ``pods/<name>/binding``, as kube-scheduler does (a
        pod's ``spec.nodeName`` cannot be patched). A pod already on a node raises `Conflict`;
        `uid` (when given) must be the pod's, else `Conflict` too."""
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        if uid:
            metadata["uid"] = uid
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        self._json("POST", KINDS[Kind.PODS].path(namespace, name, "binding"), body=body)

    def delete(
        self,
        kind: Kind,
        name: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        uid: str | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> dict[str, Any]:
        """Delete one object; returns the deleted object (every resource.k8s.io kind, and any
        object while finalizers hold it) or a Status.

        `resource_version`/`uid` are preconditions: a mismatch raises `Conflict`.
        """
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        preconditions = {
            k: v for k, v in (("resourceVersion", resource_version), ("uid", uid)) if v
        }
        if preconditions:
            options["preconditions"] = preconditions
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        return self._json("DELETE", KINDS[kind].path(namespace, name), body=options)


# msgspec decodes list pages and watch events about twice as fast as the standard library (the
# cold mirror decodes ~100 MB of JSON at 5,000 nodes); same Python values.
_decode = msgspec.json.Decoder().decode


def _watch_event(line: bytes) -> dict[str, Any]:
    try:
        event = _decode(line)
    except (ValueError, RecursionError) as exc:
        raise Unavailable(f"malformed watch event: {line[:200]!r}") from exc
    if not isinstance(event, dict) or "type" not in event:
        raise Unavailable(f"malformed watch event: {line[:200]!r}")
    if event["type"] == "ERROR":
        status = event.get("object") if isinstance(event.get("object"), dict) else None
        code = int((status or {}).get("code") or 500)
        message = str((status or {}).get("message") or "watch error")
        raise error_class(code, status)(message, code=code, status=status)
    return event
