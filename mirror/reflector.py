"""The list+watch loop that keeps one kind's rows equal to the cluster (DESIGN §3).

list (streamed page by page) → watch from the list's resourceVersion with bookmarks → apply
events in batches → on ``410 Gone`` relist and reconcile (deletes included) → after a dropped
connection resume from the last committed resourceVersion, backing off with jitter.

Before each watch request the reflector checks that its resourceVersion still belongs to the
cluster's history: the cluster's identity (the ``kube-system`` uid) must be the one the rows
came from, and the server must have reached that resourceVersion (a list at it must not answer
``ResourceVersionTooLarge``). A restarted or replaced cluster fails one of the two; a watch
would then hang silently (kube-apiserver keeps a watch from the future open and sends nothing)
or replay a foreign history. Either failure relists; a list whose resourceVersion is below the
saved one, or a new identity, *resets*: every listed object is rewritten and every row not
listed is deleted, whatever the versions say, since versions of two histories do not compare.

The resourceVersion the watcher resumes from is committed in the same transaction as the rows
of the batch that reached it (``MirrorStatus.resource_version``). A watcher killed mid-batch
therefore restarts from the previous batch's version and replays those events, which the store
ignores when already applied: nothing is lost and nothing is applied twice.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import DatabaseError, close_old_connections, connection, transaction
from django.db.models import F
from django.utils import timezone

from dra.memory import without_cyclic_gc
from kube.client import Cluster
from kube.errors import ClusterError, Gone, ResourceVersionTooLarge, Unreachable
from kube.kinds import Kind
from mirror.classes import refresh_device_classes
from mirror.following import follow_claims
from mirror.mapping import map_object, resource_version_of
from mirror.models import MirrorStatus
from mirror.signals import cluster_replaced
from mirror.states import STATE_KINDS, PoolKey, all_pools, refresh_pools
from mirror.store import (
    Applied,
    analyze_after_load,
    apply_events,
    commit_without_waiting,
    delete_missing,
    has_rows,
    is_newer,
    stored_versions,
    upsert,
)
from portal.metrics import MIRROR_BATCH_SECONDS

__all__ = ["Backoff", "Reflector", "refresh_connection"]

logger = logging.getLogger(__name__)

_END = object()
PARTIAL_LIST = "PartialObjectMetadataList"
# Kinds whose device states this process has recomputed in full once (see ``relist``).
_STATES_CHECKED: set[Kind] = set()


def refresh_connection() -> None:
    """Drops a broken or expired database connection before the next unit of work.

    Long-running loops outlive ``CONN_MAX_AGE`` and database restarts (STYLE §15). Inside an
    atomic block (a caller's transaction, or a test's) the connection is left alone.
    """
    if not connection.in_atomic_block:
        close_old_connections()


def _uid_of(item: Any) -> str:
    metadata = item.get("metadata") if isinstance(item, dict) else None
    uid = metadata.get("uid") if isinstance(metadata, dict) else None
    return uid if isinstance(uid, str) else ""


def _names_of(objects: list[Any]) -> list[tuple[str, str]]:
    """(namespace, name) of each object that has them."""
    names = set()
    for item in objects:
        metadata = item.get("metadata") if isinstance(item, dict) else None
        if isinstance(metadata, dict) and metadata.get("name"):
            names.add((str(metadata.get("namespace") or ""), str(metadata["name"])))
    return sorted(names)


def _is_below(version: str, saved: str | None) -> bool:
    """Whether ``version`` comes before ``saved`` (both integers, as every API server issues
    them): the cluster's history went back."""
    if not saved or not version.isdigit() or not saved.isdigit():
        return False
    return int(version) < int(saved)


@dataclass
class Backoff:
    """Exponential backoff with jitter: 0.25 s doubling, each delay drawn from the upper half
    of its ceiling. Capped at ``unreachable_cap`` (5 s) while the server does not answer at
    all, so a restarted API server is used again within seconds, and at ``cap`` (30 s) while
    it answers errors, so an overloaded one is not hammered."""

    base: float = 0.25
    cap: float = 30.0
    unreachable_cap: float = 5.0
    attempt: int = 0

    def next_delay(self, *, unreachable: bool = False) -> float:
        self.attempt = min(self.attempt + 1, 32)
        cap = min(self.cap, self.unreachable_cap) if unreachable else self.cap
        ceiling = min(cap, self.base * 2**self.attempt)
        return random.uniform(ceiling / 2, ceiling)  # noqa: S311

    def reset(self) -> None:
        self.attempt = 0


class Reflector:
    """Mirrors one kind. Not thread-safe: one reflector per kind, guarded by the watcher lock.

    ``resync_seconds``: how often a complete relist runs even without errors (a reconcile that
    writes nothing when nothing changed). A batch of events is committed when the stream
    pauses, when it holds ``max_batch`` events, or after ``max_delay`` seconds of collecting.
    """

    def __init__(
        self,
        kind: Kind,
        cluster: Cluster,
        *,
        page_size: int = 500,
        watch_seconds: int = 60,
        max_batch: int = 1000,
        max_delay: float = 0.2,
        resync_seconds: float = 15 * 60,
        watcher: str = "",
    ) -> None:
        self.kind = kind
        self.cluster = cluster
        self.page_size = page_size
        self.watch_seconds = watch_seconds
        self.max_batch = max_batch
        self.max_delay = max_delay
        self.resync_seconds = resync_seconds
        self.watcher = watcher
        self.backoff = Backoff()
        self._batch_seconds = MIRROR_BATCH_SECONDS.labels(kind.value)
        status, _ = MirrorStatus.objects.get_or_create(kind=kind.value)
        self.resource_version: str | None = status.resource_version or None
        self.cluster_uid = status.cluster_uid
        self._identity = status.cluster_uid  # the cluster's, as last read; saved by a relist
        # Persisted, so the resync interval spans the bounded runs of successive watchers.
        self._listed_at = status.last_list_at
        self._failing = bool(status.last_error)
        self._relist_due = False
        self._reset_due = False

    # -- the loop ----------------------------------------------------------------------------

    def run(
        self,
        *,
        seconds: float,
        stop: threading.Event | None = None,
        keepalive: Callable[[], bool] | None = None,
    ) -> None:
        """Mirrors for about ``seconds``, or until ``stop`` is set or ``keepalive()`` is False."""
        stop = stop or threading.Event()
        deadline = time.monotonic() + seconds

        def running() -> bool:
            if stop.is_set() or time.monotonic() >= deadline:
                return False
            return keepalive() if keepalive is not None else True

        while running():
            try:
                refresh_connection()
                self.check_history()
                if self.resource_version is None or self._relist_due or self._resync_due():
                    self.relist(reset=self._reset_due)
                self.watch(running)
                self.backoff.reset()
            except Gone:
                logger.info(
                    "%s: resourceVersion %s expired, relisting", self.kind, self.resource_version
                )
                self.resource_version = None
            except (ClusterError, DatabaseError) as error:
                self._record_error(error)
                stop.wait(self.backoff.next_delay(unreachable=isinstance(error, Unreachable)))
        self._set_state(MirrorStatus.State.STOPPED)

    def _resync_due(self) -> bool:
        if self._listed_at is None:
            return True
        return timezone.now() - self._listed_at >= timedelta(seconds=self.resync_seconds)

    # -- continuity ----------------------------------------------------------------------------

    def check_history(self) -> None:
        """Checks that the saved position belongs to the cluster's current history; when it
        does not, schedules a relist (a reset when the cluster's identity changed).

        Two cheap requests: the ``kube-system`` namespace, and a one-item list that must not
        be older than the saved resourceVersion. Both answered also means the server is back:
        the last error is cleared.
        """
        identity = self.cluster.identity()
        self._identity = identity or self.cluster_uid
        if identity and self.cluster_uid and identity != self.cluster_uid:
            logger.warning(
                "%s: the cluster was replaced (kube-system uid %s, was %s): relisting",
                self.kind,
                identity,
                self.cluster_uid,
            )
            self._relist_due = self._reset_due = True
        elif identity and not self.cluster_uid:
            self.cluster_uid = identity
            MirrorStatus.objects.filter(kind=self.kind.value).update(cluster_uid=identity)
        if self.resource_version and not self._relist_due:
            try:
                self.cluster.list_page(
                    self.kind,
                    limit=1,
                    resource_version=self.resource_version,
                    resource_version_match="NotOlderThan",
                )
            except ResourceVersionTooLarge:
                # The cluster restarted below our resourceVersion, or this API server lags
                # behind its peers: a fresh list (no resourceVersion: a consistent read) tells.
                logger.warning(
                    "%s: the API server has not reached resourceVersion %s: relisting",
                    self.kind,
                    self.resource_version,
                )
                self._relist_due = True
        self._recovered()

    # -- list --------------------------------------------------------------------------------

    def relist(self, *, reset: bool = False) -> Applied:
        """Lists the kind page by page and makes the rows equal to it.

        Rows are written only for objects whose resourceVersion changed; rows of objects absent
        from the list are deleted unless a watch already wrote a newer version. Memory stays
        bounded by one page plus the set of uids.

        A *reset* (``reset``, or a list older than the saved resourceVersion: the cluster's
        history went back) rewrites every listed object and deletes every row not listed.
        """
        started = time.monotonic()
        self._set_state(MirrorStatus.State.LISTING)
        # The identity is read with the list, so that the rows and it come from one cluster.
        identity = self.cluster.identity()
        if identity and self.cluster_uid and identity != self.cluster_uid and not reset:
            logger.warning("%s: the cluster was replaced: resetting", self.kind)
            reset = True
        self._identity = identity or self._identity
        applied = Applied()
        seen: set[str] = set()
        # Device states are recomputed once, at the end, for every pool the pages touched
        # (the first relist of a kind in this process recomputes them all: it heals states a
        # process that died mid-relist left behind).
        pools: set[PoolKey] = set()
        # With rows to compare against, pages are listed as metadata first (uids and
        # resourceVersions, a fraction of the bytes to read and decode) and only a page that
        # holds a change is asked for again, whole, at the same snapshot.
        compare = not reset and has_rows(self.kind)
        limit = self.page_size
        continue_: str | None = None
        list_version = ""
        while True:
            page = self.cluster.list_page(
                self.kind, limit=limit, continue_=continue_, metadata_only=compare
            )
            metadata = page.get("metadata") or {}
            list_version = list_version or str(metadata.get("resourceVersion") or "")
            if continue_ is None and not reset and _is_below(list_version, self.resource_version):
                logger.warning(
                    "%s: the cluster's history went back from %s to %s: resetting",
                    self.kind,
                    self.resource_version,
                    list_version,
                )
                reset = True
            items = page.get("items") or []
            uids = [_uid_of(item) for item in items]
            seen.update(uid for uid in uids if uid)
            with transaction.atomic(), without_cyclic_gc():
                commit_without_waiting()
                # A kind with no rows when the list began (a cold mirror) has none to compare
                # (at worst an object is written again: every write is idempotent).
                stored = (
                    {}
                    if reset or not compare
                    else stored_versions(self.kind, [u for u in uids if u])
                )
                # Only objects that changed are mapped: an unchanged relist costs the list
                # and one indexed query per page.
                changed = [
                    item
                    for item, uid in zip(items, uids, strict=True)
                    if reset or not uid or is_newer(resource_version_of(item), stored.get(uid))
                ]
                if changed and page.get("kind") == PARTIAL_LIST:
                    changed = self._whole(changed, continue_, list_version, limit)
                applied += upsert(
                    self.kind, [map_object(self.kind, item) for item in changed], pending=pools
                )
            continue_ = metadata.get("continue")
            if not continue_:
                break
        with transaction.atomic():
            commit_without_waiting()
            applied.deleted += delete_missing(
                self.kind, seen, "" if reset else list_version, pending=pools
            )
            if self.kind in STATE_KINDS and self.kind not in _STATES_CHECKED:
                pools |= all_pools()
                _STATES_CHECKED.add(self.kind)
            refresh_pools(pools)
            if applied.written or applied.deleted:
                self._after_change(None)
            now = timezone.now()
            MirrorStatus.objects.filter(kind=self.kind.value).update(
                resource_version=list_version,
                cluster_uid=self._identity,
                state=MirrorStatus.State.WATCHING,
                relists_total=F("relists_total") + 1,
                last_list_at=now,
                last_list_seconds=time.monotonic() - started,
                last_seen_at=now,
                last_error="",
                heartbeat_at=now,
                watcher=self.watcher,
            )
        if not compare:
            analyze_after_load(self.kind, applied.written)
        self.resource_version, self.cluster_uid = list_version, self._identity
        self._listed_at = now
        self._failing = self._relist_due = self._reset_due = False
        if reset:
            cluster_replaced.send(sender=Reflector, kind=self.kind, cluster_uid=self._identity)
        logger.info(
            "%s: listed %d objects at %s in %.2fs (%d written, %d deleted%s)",
            self.kind,
            len(seen),
            list_version,
            time.monotonic() - started,
            applied.written,
            applied.deleted,
            ", reset" if reset else "",
        )
        return applied

    def _whole(
        self, partial: list[dict[str, Any]], continue_: str | None, list_version: str, limit: int
    ) -> list[dict[str, Any]]:
        """The whole objects of ``partial`` (metadata-only items of one page): the same page
        listed again at the same snapshot (its continue token, or the list's resourceVersion
        for the first page), so the rows still come from one consistent list."""
        if continue_:
            page = self.cluster.list_page(self.kind, limit=limit, continue_=continue_)
        else:
            page = self.cluster.list_page(
                self.kind,
                limit=limit,
                resource_version=list_version,
                resource_version_match="Exact",
            )
        wanted = {_uid_of(item) for item in partial}
        return [item for item in page.get("items") or [] if _uid_of(item) in wanted]

    # -- watch -------------------------------------------------------------------------------

    def watch(self, running: Callable[[], bool]) -> None:
        """One watch request: applies events in batches until the server ends the stream.

        A reader thread feeds a queue so a batch is committed as soon as the stream pauses,
        not only when the next event arrives.
        """
        assert self.resource_version is not None
        events: queue.Queue[Any] = queue.Queue(maxsize=2 * self.max_batch)
        reader = threading.Thread(
            target=self._read,
            args=(self.resource_version, events),
            daemon=True,
            name=f"watch-{self.kind}",
        )
        reader.start()
        self._set_state(MirrorStatus.State.WATCHING)
        batch: list[dict[str, Any]] = []
        first_received: float | None = None
        collecting_since = 0.0
        next_check = time.monotonic() + 0.5
        while True:
            # A busy stream (events or frequent bookmarks) never pauses: still honour stop
            # and renew the lock on time.
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + 0.5
                if not running():
                    if batch:
                        self._commit(batch, first_received)
                    return
            try:
                received, item = events.get(timeout=0.05 if batch else 0.5)
            except queue.Empty:
                if batch:
                    self._commit(batch, first_received)
                    batch, first_received = [], None
                if not running():
                    return  # the reader ends with its request's timeoutSeconds
                self._heartbeat()
                continue
            if item is _END:
                break
            if isinstance(item, BaseException):
                if batch:
                    self._commit(batch, first_received)
                raise item
            if item.get("type") == "BOOKMARK":
                if batch:
                    self._commit(batch, first_received)
                    batch, first_received = [], None
                self._bookmark(resource_version_of(item.get("object") or {}))
                continue
            if not batch:
                collecting_since = time.monotonic()
            batch.append(item)
            first_received = first_received or received
            # A steady stream never pauses: a batch is also cut after ``max_delay`` of
            # collecting, so an event waits at most that long for its commit. A backlog still
            # goes in whole batches (reading queued events takes far less than that).
            if (
                len(batch) >= self.max_batch
                or time.monotonic() - collecting_since >= self.max_delay
            ):
                self._commit(batch, first_received)
                batch, first_received = [], None
        if batch:
            self._commit(batch, first_received)

    def _read(self, resource_version: str, events: queue.Queue[Any]) -> None:
        try:
            for event in self.cluster.watch(
                self.kind, resource_version=resource_version, timeout_seconds=self.watch_seconds
            ):
                events.put((time.monotonic(), event))
            events.put((time.monotonic(), _END))
        except BaseException as error:  # handed to the applying thread, which decides
            events.put((time.monotonic(), error))

    def _commit(self, batch: list[dict[str, Any]], first_received: float | None) -> None:
        version = resource_version_of(batch[-1].get("object") or {}) or self.resource_version
        started = time.perf_counter()
        with transaction.atomic(), without_cyclic_gc():
            commit_without_waiting()
            applied = apply_events(self.kind, batch)
            self._after_change(
                [
                    obj
                    for obj in ((event.get("object") or {}) for event in batch)
                    if _uid_of(obj) not in applied.same_spec
                ]
            )
            now = timezone.now()
            MirrorStatus.objects.filter(kind=self.kind.value).update(
                resource_version=version,
                events_total=F("events_total") + len(batch),
                last_event_at=now,
                last_seen_at=now,
                heartbeat_at=now,
                lag_seconds=(time.monotonic() - first_received) if first_received else None,
            )
        self._batch_seconds.observe(time.perf_counter() - started)
        self.resource_version = version

    def _after_change(self, objects: list[dict[str, Any]] | None) -> None:
        """Schedules what derives from this kind's rows, once the transaction commits.

        Device ↔ class memberships follow slices (only the changed ones; all after a relist,
        ``objects=None``) and classes (all devices). Portal requests follow their claims and
        templates (``mirror.following``: those in the batch; all after a relist).
        """
        if self.kind in (Kind.RESOURCE_CLAIMS, Kind.RESOURCE_CLAIM_TEMPLATES):
            follow_claims.delay_on_commit(None if objects is None else _names_of(objects))
        if self.kind == Kind.RESOURCE_SLICES and objects is not None:
            uids = sorted({str((o.get("metadata") or {}).get("uid", "")) for o in objects} - {""})
            if uids:
                refresh_device_classes.delay_on_commit(uids)
        elif self.kind in (Kind.RESOURCE_SLICES, Kind.DEVICE_CLASSES):
            refresh_device_classes.delay_on_commit(None)

    def _bookmark(self, version: str) -> None:
        """A bookmark moves the resume point and proves the stream is alive and current."""
        now = timezone.now()
        if version and version != self.resource_version:
            MirrorStatus.objects.filter(kind=self.kind.value).update(
                resource_version=version, last_seen_at=now, heartbeat_at=now
            )
            self.resource_version = version
        else:
            MirrorStatus.objects.filter(kind=self.kind.value).update(
                last_seen_at=now, heartbeat_at=now
            )

    # -- status ------------------------------------------------------------------------------

    _last_heartbeat = 0.0

    def _heartbeat(self) -> None:
        if time.monotonic() - self._last_heartbeat >= 5:
            self._last_heartbeat = time.monotonic()
            MirrorStatus.objects.filter(kind=self.kind.value).update(
                heartbeat_at=timezone.now(), watcher=self.watcher
            )

    def _set_state(self, state: MirrorStatus.State) -> None:
        try:
            MirrorStatus.objects.filter(kind=self.kind.value).update(
                state=state, heartbeat_at=timezone.now(), watcher=self.watcher
            )
        except DatabaseError:
            logger.warning("%s: could not record state %s", self.kind, state)

    def _recovered(self) -> None:
        """The API server answered again: the last error stops showing (its time and the
        error count stay)."""
        if self._failing:
            MirrorStatus.objects.filter(kind=self.kind.value).update(last_error="")
            self._failing = False

    def _record_error(self, error: Exception) -> None:
        logger.warning("%s: %s: %s", self.kind, type(error).__name__, error)
        self._failing = True
        try:
            refresh_connection()
            MirrorStatus.objects.filter(kind=self.kind.value).update(
                state=MirrorStatus.State.BACKING_OFF,
                error_count=F("error_count") + 1,
                last_error=f"{type(error).__name__}: {error}"[:2000],
                last_error_at=timezone.now(),
            )
        except DatabaseError:
            logger.warning("%s: could not record the error", self.kind)
