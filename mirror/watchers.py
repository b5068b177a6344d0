"""Running the watchers: one reflector per kind, in the process that holds the kind's lock.

Every watcher process (``manage.py watch``; the embedded mode's threads) runs a thread per
kind. The thread that holds the kind's lock (``mirror.locks``) mirrors it; in every other
process the kind's thread is a standby that tries the lock every ``WATCHER_STANDBY_SECONDS``,
so when the active watcher dies its kinds move within the lock's TTL plus a poll (as
Kubernetes controllers elect a leader), and a watcher that stops cleanly hands them over at
once. While it holds a kind, a watcher starts a fresh client and reflector every
``WATCH_RUN_SECONDS`` (the cluster configuration read again), resuming from the committed
resourceVersion.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Iterable

from django.conf import settings
from django.db import connections
from django.db.models import F
from django.utils import timezone

from kube.errors import ClusterError
from kube.kinds import Kind
from mirror.locks import Lease, WatcherLock, watcher_lock
from mirror.mapping import MIRRORED_KINDS
from mirror.models import MirrorStatus
from mirror.reflector import Reflector, refresh_connection
from portal.cluster import connected

__all__ = [
    "keep_watching",
    "record_error",
    "run_watcher",
    "start_watchers",
]

logger = logging.getLogger(__name__)
# After an unexpected failure (database away at the start of a run, say) a kind's thread
# waits this long before it tries again.
RETRY_SECONDS = 5.0


def record_error(kind: Kind, error: Exception) -> None:
    """Counts an error against the kind's mirror status, for the status page and the API."""
    MirrorStatus.objects.get_or_create(kind=kind.value)
    MirrorStatus.objects.filter(kind=kind.value).update(
        state=MirrorStatus.State.BACKING_OFF,
        error_count=F("error_count") + 1,
        last_error=f"{type(error).__name__}: {error}"[:2000],
        last_error_at=timezone.now(),
    )


def _name(lock: WatcherLock) -> str:
    """Which watcher mirrors a kind, as the Mirror page shows it: host and lock holder."""
    return f"{socket.gethostname()}:{lock.holder[:8]}"


def _mirror(kind: Kind, *, seconds: float, stop: threading.Event, lease: Lease) -> None:
    """One reflector run of about ``seconds``, ended early by ``stop`` or a lost lease.
    Raises :class:`ClusterError` when the cluster configuration cannot be read (recorded)."""
    try:
        cluster = connected()
    except ClusterError as error:
        record_error(kind, error)
        raise
    with cluster:
        reflector = Reflector(
            kind,
            cluster,
            watch_seconds=settings.WATCH_REQUEST_SECONDS,
            resync_seconds=settings.MIRROR_RESYNC_SECONDS,
            watcher=_name(lease.lock),
        )
        reflector.run(seconds=seconds, stop=stop, keepalive=lease.is_held)


def _release(lock: WatcherLock) -> None:
    with contextlib.suppress(Exception):  # Redis away: the key expires by itself
        lock.release()
    refresh_connection()


def run_watcher(kind: Kind, *, seconds: float, stop: threading.Event | None = None) -> bool:
    """Mirrors ``kind`` for about ``seconds`` if no other watcher holds it, then lets go.

    Returns False without doing anything when another watcher holds the kind's lock.
    """
    lock = watcher_lock(kind.value)
    if not lock.acquire():
        return False
    try:
        with Lease(lock) as lease:
            _mirror(kind, seconds=seconds, stop=stop or threading.Event(), lease=lease)
    finally:
        _release(lock)
    return True


def keep_watching(kind: Kind, stop: threading.Event) -> None:
    """Mirrors ``kind`` until ``stop`` is set, whenever this process holds its lock: a standby
    while another watcher does. Never raises: a watcher thread must not die silently."""
    try:
        _keep_watching(kind, stop)
    finally:
        connections.close_all()  # this thread's own: nothing else closes them


def _keep_watching(kind: Kind, stop: threading.Event) -> None:
    standby_logged = False
    while not stop.is_set():
        lock = watcher_lock(kind.value)
        try:
            acquired = lock.acquire()
        except Exception as error:  # Redis away: every watcher waits for it alike
            logger.warning("%s: cannot reach the watcher lock: %s", kind, error)
            stop.wait(RETRY_SECONDS)
            continue
        if not acquired:
            if not standby_logged:
                logger.info("%s: another watcher holds it; standing by", kind)
                standby_logged = True
            stop.wait(settings.WATCHER_STANDBY_SECONDS)
            continue
        logger.info("%s: watching (lock %s)", kind, lock.holder[:8])
        standby_logged = False
        try:
            with Lease(lock) as lease:
                while lease.is_held() and not stop.is_set():
                    try:
                        _mirror(kind, seconds=settings.WATCH_RUN_SECONDS, stop=stop, lease=lease)
                    except ClusterError:
                        stop.wait(RETRY_SECONDS)  # misconfigured: recorded; read it again soon
                    except Exception:
                        logger.exception("%s watcher failed; starting again", kind)
                        stop.wait(RETRY_SECONDS)
                if not lease.is_held():
                    logger.warning("%s: lost the watcher lock; standing by", kind)
        finally:
            _release(lock)


def start_watchers(
    stop: threading.Event, kinds: Iterable[Kind] = MIRRORED_KINDS
) -> list[threading.Thread]:
    """A daemon thread per kind running :func:`keep_watching` until ``stop`` is set."""
    threads = [
        threading.Thread(
            target=keep_watching, args=(kind, stop), daemon=True, name=f"watcher-{kind}"
        )
        for kind in kinds
    ]
    for thread in threads:
        thread.start()
    return threads
