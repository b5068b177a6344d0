"""Celery tasks of the cluster mirror (thin: they call ``mirror.watchers``)."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from mirror.classes import refresh_device_classes
from mirror.cluster import ClusterError, Kind
from mirror.locks import watcher_lock
from mirror.mapping import MIRRORED_KINDS
from mirror.watchers import run_watcher

__all__ = ["ensure_watchers", "refresh_device_classes", "watch_kind"]


@shared_task(
    name="devices.tasks.watch_kind",
    ignore_result=True,
    acks_late=False,
    time_limit=None,
    soft_time_limit=None,
)
def watch_kind(kind: str) -> str:
    """One bounded watch run (``WATCH_RUN_SECONDS``), then hands over to a fresh task.

    Bounded runs keep a worker restart from losing more than one run, and let the lock move to
    another worker. When the lock is held elsewhere the task ends at once.
    """
    try:
        if not run_watcher(Kind(kind), seconds=settings.WATCH_RUN_SECONDS):
            return "held elsewhere"
    except ClusterError:
        # Misconfiguration (recorded on the mirror status): beat retries in a while rather
        # than this task spinning.
        return "failed"
    watch_kind.apply_async((kind,), queue="watchers")
    return "ran"


@shared_task(name="devices.tasks.ensure_watchers", ignore_result=True)
def ensure_watchers() -> list[str]:
    """Beat: starts a watcher for every kind whose lock nobody holds (dead or never started)."""
    started = []
    for kind in MIRRORED_KINDS:
        if not watcher_lock(kind.value).is_held():
            watch_kind.apply_async((kind.value,), queue="watchers")
            started.append(kind.value)
    return started
