"""Watches: the chunked stream of events and bookmarks one watch request answers (a mixin of
`Handler`)."""

from __future__ import annotations

import contextlib
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from .errors import ApiError
from .faults import Fault
from .negotiation import Conversion, convert_object, include_object
from .resources import Resource
from .store import Entry, WatchClosed, dumps

__all__ = ["Abort", "WatchEncoder", "Watching"]

CLOSING_BOOKMARK_LEAD = 2.0  # seconds before timeoutSeconds
DEFAULT_WATCH_TIMEOUT = 1800.0


class Abort(Exception):  # noqa: N818 - control flow: drop the connection without answering
    pass


class WatchEncoder:
    """One watch's events as kube-apiserver frames them: each object as stored, or converted
    as the watch's `Accept` asked (a Table's columns come with the first event only). An
    object that cannot be converted goes as it is, as the real server does."""

    def __init__(
        self, resource: Resource, conversion: Conversion | None, query: dict[str, str]
    ) -> None:
        self.resource = resource
        self.conversion = conversion
        self.query = query
        self.headers = True

    def _frame(self, type_: str, obj: dict[str, Any]) -> bytes:
        """`obj` as stored (without apiVersion and kind)."""
        if self.conversion is not None:
            try:
                converted = convert_object(
                    self.resource, obj, self.conversion, self.query, headers=self.headers
                )
            except ApiError:
                pass
            else:
                self.headers = False
                return dumps({"type": type_, "object": converted}) + b"\n"
        r = self.resource
        return (
            dumps({"type": type_, "object": {"apiVersion": r.api_version, "kind": r.kind, **obj}})
            + b"\n"
        )

    def event(self, type_: str, entry: Entry) -> bytes:
        if self.conversion is None:  # the stored bytes, not re-encoded
            return b'{"type":"%s","object":%s}\n' % (type_.encode(), entry.full())
        return self._frame(type_, entry.obj)

    def bookmark(self, rv: int, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return self._frame("BOOKMARK", {"metadata": meta})


class Watching(BaseHTTPRequestHandler):
    """The watch half of `Handler`."""

    server: Any

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _watch(
        self,
        resource: Resource,
        namespace: str | None,
        query: dict[str, str],
        matchers: tuple[Any, Any],
        fault: Fault | None,
        conversion: Conversion | None,
    ) -> None:
        emulator = self.server.emulator
        store = emulator.store
        if conversion is not None and conversion.kind == "Table":
            include_object(query)  # refused before the stream starts, as the real server does
        rv_param = query.get("resourceVersion", "")
        if rv_param not in ("", "0") and not rv_param.isdigit():
            raise ApiError.bad_request(f"invalid resource version {rv_param!r}")
        try:
            timeout = float(query.get("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT)
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
        encoder = WatchEncoder(resource, conversion, query)

        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        # The connection ends with the watch: say so, or a client returns it to its pool
        # and its next request meets a closed socket ("Remote end closed connection").
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        emulator._watch_started()
        try:
            if budget == 0:
                raise Abort
            for start in range(0, len(initial), 500):
                batch = initial[start : start + 500]
                if budget is not None:
                    batch = batch[:budget]
                    budget -= len(batch)
                self._chunk(b"".join(encoder.event("ADDED", e) for e in batch))
                if budget == 0:
                    raise Abort
            if query.get("sendInitialEvents") == "true" and bookmarks:
                self._chunk(encoder.bookmark(pos, initial_end=True))
            next_bookmark = time.monotonic() + emulator.bookmark_interval
            # kube-apiserver also sends one bookmark shortly before the watch times out, so a
            # client resumes from a fresh resourceVersion; none when the watch closes.
            closing_bookmark = deadline - CLOSING_BOOKMARK_LEAD
            if closing_bookmark < next_bookmark:
                next_bookmark = max(closing_bookmark, time.monotonic())
                closing_bookmark = float("inf")
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
                        out.append(encoder.event("ADDED" if now_in else "DELETED", event.entry))
                    elif now_in:
                        out.append(encoder.event(event.type, event.entry))
                    if budget is not None and len(out) >= budget:
                        self._chunk(b"".join(out))
                        raise Abort
                self._chunk(b"".join(out))
                if budget is not None:
                    budget -= len(out)
                # A watch from a resourceVersion this server has not reached gets no
                # bookmarks (kube-apiserver 1.36 keeps such a watch open and silent).
                if bookmarks and time.monotonic() >= next_bookmark and pos <= store.rv:
                    self._chunk(encoder.bookmark(pos))
                    next_bookmark = time.monotonic() + emulator.bookmark_interval
                    if closing_bookmark < next_bookmark:
                        next_bookmark = max(closing_bookmark, time.monotonic())
                        closing_bookmark = float("inf")
            self.wfile.write(b"0\r\n\r\n")
        except WatchClosed as exc:
            if exc.clean:
                with contextlib.suppress(OSError):
                    self.wfile.write(b"0\r\n\r\n")
            else:
                raise Abort from exc
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            emulator._watch_ended()
