"""The list+watch loop that keeps one kind's rows equal to the cluster (DESIGN §3).

list (streamed page by page) → watch from the list's resourceVersion with bookmarks → apply
events in batches → on ``410 Gone`` relist and reconcile (deletes included) → after a dropped
connection resume from the last committed resourceVersion, backing off with jitter.

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
from typing import Any

from django.db import DatabaseError, close_old_connections, connection, transaction
from django.db.models import F
from django.utils import timezone

from mirror.cluster import Cluster, ClusterError, Gone, Kind
from mirror.mapping import map_object, resource_version_of
from mirror.models import MirrorStatus
from mirror.store import (
    Applied,
    apply_events,
    delete_missing,
    is_newer,
    stored_versions,
    upsert,
)

__all__ = ["Backoff", "Reflector", "refresh_connection"]

logger = logging.getLogger(__name__)

_END = object()


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


@dataclass
class Backoff:
    """Exponential backoff with full jitter: 0.5 s doubling up to 30 s."""

    base: float = 0.5
    cap: float = 30.0
    attempt: int = 0

    def next_delay(self) -> float:
        self.attempt += 1
        return random.uniform(0, min(self.cap, self.base * 2**self.attempt))  # noqa: S311

    def reset(self) -> None:
        self.attempt = 0


class Reflector:
    """Mirrors one kind. Not thread-safe: one reflector per kind, guarded by the watcher lock.

    ``resync_seconds``: how often a complete relist runs even without errors (a reconcile that
    writes nothing when nothing changed).
    """

    def __init__(
        self,
        kind: Kind,
        cluster: Cluster,
        *,
        page_size: int = 500,
        watch_seconds: int = 60,
        max_batch: int = 1000,
        resync_seconds: float = 15 * 60,
        watcher: str = "",
    ) -> None:
        self.kind = kind
        self.cluster = cluster
        self.page_size = page_size
        self.watch_seconds = watch_seconds
        self.max_batch = max_batch
        self.resync_seconds = resync_seconds
        self.watcher = watcher
        self.backoff = Backoff()
        status, _ = MirrorStatus.objects.get_or_create(kind=kind.value)
        self.resource_version: str | None = status.resource_version or None
        self._listed_at = time.monotonic() if self.resource_version else None

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
                if self.resource_version is None or self._resync_due():
                    self.relist()
                self.watch(running)
                self.backoff.reset()
            except Gone:
                logger.info(
                    "%s: resourceVersion %s expired, relisting", self.kind, self.resource_version
                )
                self.resource_version = None
            except (ClusterError, DatabaseError) as error:
                self._record_error(error)
                stop.wait(self.backoff.next_delay())
        self._set_state(MirrorStatus.State.STOPPED)

    def _resync_due(self) -> bool:
        return self._listed_at is None or time.monotonic() - self._listed_at >= self.resync_seconds

    # -- list --------------------------------------------------------------------------------

    def relist(self) -> Applied:
        """Lists the kind page by page and makes the rows equal to it.

        Rows are written only for objects whose resourceVersion changed; rows of objects absent
        from the list are deleted unless a watch already wrote a newer version. Memory stays
        bounded by one page plus the set of uids.
        """
        started = time.monotonic()
        self._set_state(MirrorStatus.State.LISTING)
        applied = Applied()
        seen: set[str] = set()
        continue_: str | None = None
        while True:
            page = self.cluster.list_page(self.kind, limit=self.page_size, continue_=continue_)
            items = page.get("items") or []
            uids = [_uid_of(item) for item in items]
            seen.update(uid for uid in uids if uid)
            with transaction.atomic():
                stored = stored_versions(self.kind, [uid for uid in uids if uid])
                # Only objects that changed are mapped: an unchanged relist costs the list
                # and one indexed query per page.
                changed = [
                    map_object(self.kind, item)
                    for item, uid in zip(items, uids, strict=True)
                    if not uid or is_newer(resource_version_of(item), stored.get(uid))
                ]
                applied += upsert(self.kind, changed)
            metadata = page.get("metadata") or {}
            continue_ = metadata.get("continue")
            if not continue_:
                list_version = str(metadata.get("resourceVersion") or "")
                break
        with transaction.atomic():
            applied.deleted += delete_missing(self.kind, seen, list_version)
            if applied.written or applied.deleted:
                self._after_change(None)
            MirrorStatus.objects.filter(kind=self.kind.value).update(
                resource_version=list_version,
                state=MirrorStatus.State.WATCHING,
                relists_total=F("relists_total") + 1,
                last_list_at=timezone.now(),
                last_list_seconds=time.monotonic() - started,
                heartbeat_at=timezone.now(),
                watcher=self.watcher,
            )
        self.resource_version = list_version
        self._listed_at = time.monotonic()
        logger.info(
            "%s: listed %d objects at %s in %.2fs (%d written, %d deleted)",
            self.kind,
            len(seen),
            list_version,
            time.monotonic() - started,
            applied.written,
            applied.deleted,
        )
        return applied

    # -- watch -------------------------------------------------------------------------------

    def watch(self, running: Callable[[], bool]) -> None:
        """One watch request: applies events in batches until the server ends the stream.

        A reader thread feeds a queue so a batch is committed as soon as the stream pauses,
        not only when the next event arrives.
        """
        assert self.resource_version is not None
        events: queue.Queue[Any] = queue.Queue(maxsize=10 * self.max_batch)
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
        while True:
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
            batch.append(item)
            first_received = first_received or received
            if len(batch) >= self.max_batch:
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
        with transaction.atomic():
            apply_events(self.kind, batch)
            self._after_change([(event.get("object") or {}) for event in batch])
            now = timezone.now()
            MirrorStatus.objects.filter(kind=self.kind.value).update(
                resource_version=version,
                events_total=F("events_total") + len(batch),
                last_event_at=now,
                heartbeat_at=now,
                lag_seconds=(time.monotonic() - first_received) if first_received else None,
            )
        self.resource_version = version

    def _after_change(self, objects: list[dict[str, Any]] | None) -> None:
        """Schedules what derives from this kind's rows, once the transaction commits.

        Device ↔ class memberships follow slices (only the changed ones; all after a relist,
        ``objects=None``) and classes (all devices).
        """
        from mirror.tasks import refresh_device_classes

        if self.kind == Kind.RESOURCE_SLICES and objects is not None:
            uids = sorted({str((o.get("metadata") or {}).get("uid", "")) for o in objects} - {""})
            refresh_device_classes.delay_on_commit(uids)
        elif self.kind in (Kind.RESOURCE_SLICES, Kind.DEVICE_CLASSES):
            refresh_device_classes.delay_on_commit(None)

    def _bookmark(self, version: str) -> None:
        if version and version != self.resource_version:
            MirrorStatus.objects.filter(kind=self.kind.value).update(
                resource_version=version, heartbeat_at=timezone.now()
            )
            self.resource_version = version

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

    def _record_error(self, error: Exception) -> None:
        logger.warning("%s: %s: %s", self.kind, type(error).__name__, error)
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
