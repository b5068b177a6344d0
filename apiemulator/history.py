"""The store's history: the global resourceVersion, the event log, lists at a version, watches and
compaction (a mixin of `Store`; every public method takes the lock)."""

from __future__ import annotations

import base64
import binascii
import bisect
import copy
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .entries import (
    Entry,
    Event,
    Key,
    ListResult,
    WatchClosed,
    dumps,
    matches,
)
from .errors import ApiError
from .resources import Resource
from .selectors import Matcher

__all__ = ["History"]

_SNAPSHOTS_KEPT = 32


class History:
    """Versions, the event log, lists and watches, for `Store`."""

    lock: threading.RLock
    cond: threading.Condition
    rv: int
    first_rv: int
    compacted_rv: int
    log: list[Event]
    objects: dict[Resource, dict[Key, Entry]]
    history_limit: int | None
    require_namespaces: bool
    closing: bool
    watch_epoch: int
    _snapshots: OrderedDict[tuple[Any, ...], list[Entry]]

    if TYPE_CHECKING:  # `Admission`'s, which `Store` mixes in

        def _refresh_quotas(self, namespace: str, only: str | None = None) -> None: ...

    def get(self, resource: Resource, namespace: str | None, name: str) -> Entry:
        with self.lock:
            entry = self.objects[resource].get((namespace or "", name))
        if entry is None:
            raise ApiError.not_found(resource.plural, resource.group, name)
        return entry

    def count(self, resource: Resource) -> int:
        with self.lock:
            return len(self.objects[resource])

    def _state_at(self, resource: Resource, rv: int) -> dict[Key, Entry]:
        """The objects of one kind as they were at `rv`, rewinding the event log."""
        state = dict(self.objects[resource])
        for event in reversed(self.log[rv + 1 - self.first_rv :]):
            if event.entry.resource is not resource:
                continue
            if event.prev is None:
                state.pop(event.entry.key, None)
            else:
                state[event.prev.key] = event.prev
        return state

    def list_objects(
        self,
        resource: Resource,
        namespace: str | None,
        matchers: tuple[Matcher | None, Matcher | None],
        selector_text: tuple[str, str],
        *,
        limit: int = 0,
        continue_: str | None = None,
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> ListResult:
        with self.lock:
            if continue_:
                list_rv, start = self._decode_continue(continue_)
            else:
                list_rv, start = self.rv, None
                if resource_version not in ("", "0"):
                    # NotOlderThan (the default) and Exact alike: a version this server has
                    # not reached is refused, never silently served from the past.
                    requested = self._parse_rv(resource_version)
                    if requested > self.rv:
                        raise ApiError.resource_version_too_large(requested, self.rv)
                    if resource_version_match == "Exact":
                        if requested < self.compacted_rv:
                            raise ApiError.expired(
                                "The resourceVersion for the provided list is too old."
                            )
                        list_rv = requested
            snap_key = (resource, namespace, selector_text, list_rv)
            entries = self._snapshots.get(snap_key)
            if entries is None:
                if list_rv < self.compacted_rv:
                    raise ApiError.expired(
                        "The provided continue parameter is too old to display a consistent list "
                        "result. You can start a new list without the continue parameter."
                    )
                state = self.objects[resource] if list_rv == self.rv else None
                if state is None:
                    state = self._state_at(resource, list_rv)
                entries = [e for _, e in sorted(state.items()) if matches(e, namespace, matchers)]
                if limit or continue_:
                    self._snapshots[snap_key] = entries
                    while len(self._snapshots) > _SNAPSHOTS_KEPT:
                        self._snapshots.popitem(last=False)
            else:
                self._snapshots.move_to_end(snap_key)
        begin = 0
        if start is not None:
            lo, hi = 0, len(entries)
            while lo < hi:  # first entry with key > start
                mid = (lo + hi) // 2
                if entries[mid].key <= start:
                    lo = mid + 1
                else:
                    hi = mid
            begin = lo
        if limit <= 0 or begin + limit >= len(entries):
            return ListResult(entries[begin:], list_rv)
        page = entries[begin : begin + limit]
        token = {"v": "meta.k8s.io/v1", "rv": list_rv, "start": "/".join(page[-1].key)}
        return ListResult(
            page,
            list_rv,
            base64.urlsafe_b64encode(dumps(token)).decode(),
            len(entries) - begin - limit,
        )

    @staticmethod
    def _parse_rv(text: str) -> int:
        if not text.isdigit():
            raise ApiError.bad_request(f"invalid resource version {text!r}")
        return int(text)

    @staticmethod
    def _decode_continue(token: str) -> tuple[int, Key]:
        try:
            data = json.loads(base64.urlsafe_b64decode(token.encode()))
            namespace, _, name = data["start"].rpartition("/")
            return int(data["rv"]), (namespace, name)
        except (ValueError, KeyError, TypeError, binascii.Error) as exc:
            raise ApiError.bad_request(f"continue key is not valid: {exc}") from exc

    def initial_state(
        self, resource: Resource, namespace: str | None, matchers: Iterable[Matcher | None]
    ) -> tuple[list[Entry], int, int]:
        """Current objects for a watch's synthetic ADDED events, the rv and the watch epoch."""
        with self.lock:
            entries = [
                e
                for _, e in sorted(self.objects[resource].items())
                if matches(e, namespace, matchers)
            ]
            return entries, self.rv, self.watch_epoch

    def next_events(
        self, after_rv: int, timeout: float, epoch: int, limit: int = 1000
    ) -> list[Event]:
        """Events after `after_rv`, waiting up to `timeout` seconds for the first one."""
        with self.cond:
            waited = False
            while True:
                if self.closing:
                    raise WatchClosed(clean=True)
                if self.watch_epoch != epoch:
                    raise WatchClosed(clean=False)
                if after_rv < self.compacted_rv:
                    raise ApiError.expired(
                        f"too old resource version: {after_rv} ({self.compacted_rv})"
                    )
                if self.rv > after_rv:
                    start = after_rv + 1 - self.first_rv
                    return self.log[start : start + limit]
                if waited or timeout <= 0:
                    return []
                self.cond.wait(timeout)
                waited = True

    def _commit(self, type_: str, entry: Entry, prev: Entry | None) -> Entry:
        objects = self.objects[entry.resource]
        if type_ == "DELETED":
            del objects[entry.key]
        else:
            objects[entry.key] = entry
        self.log.append(Event(type_, entry, prev))
        if self.history_limit is not None and len(self.log) > self.history_limit:
            drop = len(self.log) - self.history_limit
            del self.log[:drop]
            self.first_rv += drop
            self.compacted_rv = self.first_rv - 1
        self.cond.notify_all()
        if entry.resource.kind == "ResourceClaim" and type_ in ("ADDED", "DELETED"):
            self._refresh_quotas(entry.key[0])
        return entry

    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def compact_older_than(self, seconds: float) -> int:
        """Forget the events that happened more than ``seconds`` ago, as kube-apiserver's
        periodic etcd compaction does: a watch, an exact list or a continue token from before
        the oldest event kept gets 410. Returns the compacted resourceVersion."""
        with self.cond:
            cutoff = time.monotonic() - seconds
            # Events are logged in time order: find the first one young enough to keep.
            drop = bisect.bisect_left(self.log, cutoff, key=lambda event: event.at)
            if drop:
                del self.log[:drop]
                self.first_rv += drop
                self.compacted_rv = self.first_rv - 1
                for key in [key for key in self._snapshots if key[-1] < self.compacted_rv]:
                    del self._snapshots[key]
                self.cond.notify_all()
            return self.compacted_rv

    def compact(self) -> int:
        """Forget all history: watches and continue tokens older than now get 410."""
        with self.cond:
            self.log.clear()
            self.first_rv = self.rv + 1
            self.compacted_rv = self.rv
            self._snapshots.clear()
            self.cond.notify_all()
            return self.rv

    def close_watches(self) -> None:
        with self.cond:
            self.watch_epoch += 1
            self.cond.notify_all()

    def close(self) -> None:
        with self.cond:
            self.closing = True
            self.cond.notify_all()

    def reopen(self) -> None:
        """Serve watches again after :meth:`close` (the server came back)."""
        with self.cond:
            self.closing = False

    def dump(self, resource: Resource) -> list[dict[str, Any]]:
        """Deep copies of every object of one kind, with apiVersion and kind."""
        with self.lock:
            entries = sorted(self.objects[resource].items())
        return [copy.deepcopy(e.document()) for _, e in entries]
