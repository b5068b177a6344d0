"""Running the watchers: one bounded run of one kind under its lock (used by the Celery task),
and the embedded mode's in-process threads."""

from __future__ import annotations

import logging
import socket
import threading

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from mirror.cluster import Cluster, ClusterConfig, ClusterError, Kind
from mirror.locks import watcher_lock
from mirror.mapping import MIRRORED_KINDS
from mirror.models import MirrorStatus
from mirror.reflector import Reflector, refresh_connection

__all__ = ["cluster_config", "record_error", "run_watcher", "start_embedded_watchers"]

logger = logging.getLogger(__name__)


def cluster_config() -> ClusterConfig:
    """The cluster from settings: ``KUBE_API_SERVER`` (plain URL), ``KUBECONFIG`` (+
    ``KUBE_CONTEXT``), or the in-cluster service account."""
    return ClusterConfig(
        server=settings.KUBE_API_SERVER or None,
        kubeconfig=settings.KUBECONFIG or None,
        context=settings.KUBE_CONTEXT or None,
    )


def record_error(kind: Kind, error: Exception) -> None:
    """Counts an error against the kind's mirror status, for the status page and the API."""
    MirrorStatus.objects.get_or_create(kind=kind.value)
    MirrorStatus.objects.filter(kind=kind.value).update(
        state=MirrorStatus.State.BACKING_OFF,
        error_count=F("error_count") + 1,
        last_error=f"{type(error).__name__}: {error}"[:2000],
        last_error_at=timezone.now(),
    )


def run_watcher(kind: Kind, *, seconds: float, stop: threading.Event | None = None) -> bool:
    """Mirrors ``kind`` for about ``seconds`` if no other watcher holds it.

    Returns False without doing anything when another watcher holds the kind's lock.
    """
    lock = watcher_lock(kind.value)
    if not lock.acquire():
        return False
    watcher = f"{socket.gethostname()}:{lock.holder[:8]}"
    try:
        try:
            cluster = Cluster(cluster_config())
        except ClusterError as error:
            record_error(kind, error)
            raise
        with cluster:
            reflector = Reflector(
                kind,
                cluster,
                watch_seconds=settings.WATCH_REQUEST_SECONDS,
                resync_seconds=settings.MIRROR_RESYNC_SECONDS,
                watcher=watcher,
            )
            reflector.run(seconds=seconds, stop=stop, keepalive=lock.renew)
    finally:
        lock.release()
        refresh_connection()
    return True


def start_embedded_watchers(stop: threading.Event) -> list[threading.Thread]:
    """The embedded mode: one daemon thread per kind, each looping over bounded runs."""

    def loop(kind: Kind) -> None:
        while not stop.is_set():
            try:
                run_watcher(kind, seconds=settings.WATCH_RUN_SECONDS, stop=stop)
            except Exception:  # a watcher thread must never die silently
                logger.exception("%s watcher crashed; restarting", kind)
                stop.wait(5)

    threads = [
        threading.Thread(target=loop, args=(kind,), daemon=True, name=f"watcher-{kind}")
        for kind in MIRRORED_KINDS
    ]
    for thread in threads:
        thread.start()
    return threads
