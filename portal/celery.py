"""The Celery application.

Tasks are thin (STYLE §14): ids in, rows loaded, a service called. They use Celery's Django task
class so ``task.delay_on_commit(...)`` enqueues only once the surrounding transaction commits.
Queues are named for their work so operators can size workers per kind of work:
``default`` (lifecycle: apply, release, expiry, idle claims), ``telemetry`` (exporter scrapes
and rollups), ``allocations`` (reservations: exactly one
consumer, so they are decided one at a time against one warm index) and ``backstop`` (the
ResourceQuota backstop: in a cluster its worker alone holds the right to write ResourceQuotas,
docs/deploy.md).

Operations (docs/operations.md): a task's log lines carry its name and id and the request id of
the web request (or task) that enqueued it, sent as the ``dra_request_id`` message header; a
worker started with ``METRICS_PORT`` serves its metrics there (``portal.metrics``). Enqueueing
on commit (:func:`enqueue_on_commit`) survives a broker that is away: the row that asked for
the work is committed, and a beat task finds it and enqueues it again.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable
from typing import Any

from celery import Celery, signals
from django.db import transaction
from kombu.entity import Queue
from kombu.exceptions import OperationalError as BrokerUnavailable

from portal.logs import current_request_id, log_context

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal", task_cls="celery.contrib.django.task:DjangoTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Celery's Django fixup closes every database connection after every task unless told to reuse
# them (a new connection per task: ~6 ms each here, for every apply and every notice). Workers
# keep theirs as the web does, for CONN_MAX_AGE, and drop one that is broken or old around each
# task (``_recycle_connections``), so a restarted PostgreSQL costs one failed task, not all.
app.conf.CELERY_DB_REUSE_MAX = 1_000_000
app.conf.task_queues = (
    Queue("default"),
    Queue("telemetry"),
    Queue("allocations"),
    Queue("backstop"),
)
app.conf.task_routes = {
    "devices.tasks.telemetry_*": {"queue": "telemetry"},
    "claims.roll_up_usage": {"queue": "telemetry"},
    # Reservations are decided one at a time: run exactly one consumer of this queue.
    "claims.apply_request": {"queue": "allocations"},
    "claims.verify_reservation": {"queue": "allocations"},
    # The only tasks that write ResourceQuotas: their worker runs as its own ServiceAccount.
    "mirror.sync_backstop": {"queue": "backstop"},
    "mirror.check_backstops": {"queue": "backstop"},
}
# The beat schedule lives in code.
app.conf.beat_schedule = {
    "expire-claim-leases": {"task": "claims.expire_leases", "schedule": 60.0},
    "expire-claim-approvals": {"task": "claims.expire_approvals", "schedule": 300.0},
    "sync-claim-requests": {"task": "claims.sync_requests", "schedule": 15.0},
    "resume-claim-requests": {"task": "claims.resume_requests", "schedule": 30.0},
    # Record drift of the ResourceQuota backstops (shown, repaired only on request).
    "check-backstops": {"task": "mirror.check_backstops", "schedule": 300.0},
    "notify-lease-expiring": {"task": "notifications.lease_expiring", "schedule": 300.0},
    "notify-quota-high": {"task": "notifications.quota_high", "schedule": 300.0},
    "retry-webhooks": {"task": "notifications.retry_webhooks", "schedule": 30.0},
    # GPU readings: each source runs at its own interval (15 s by default); rollups of closed
    # 5-minute buckets; raw samples and rollups past their retention deleted.
    "telemetry-ingest": {"task": "devices.tasks.telemetry_ingest", "schedule": 5.0},
    "telemetry-roll-up": {"task": "devices.tasks.telemetry_roll_up", "schedule": 60.0},
    "telemetry-prune": {"task": "devices.tasks.telemetry_prune", "schedule": 600.0},
    "claims-roll-up-usage": {"task": "claims.roll_up_usage", "schedule": 120.0},
    # The quota's usage counters against a full count (repairs and logs any drift).
    "claims-check-usage-counters": {"task": "claims.check_usage_counters", "schedule": 900.0},
    # Idle claims: flag / unflag (and tell owners), then reclaim those past their grace period
    # where the tenant's idle policy says so. Lifecycle work: the default queue.
    "claims-sweep-idle": {"task": "claims.sweep_idle", "schedule": 120.0},
    "claims-reclaim-idle": {"task": "claims.reclaim_idle", "schedule": 120.0},
}
app.autodiscover_tasks()

logger = logging.getLogger(__name__)

REQUEST_ID_HEADER = "dra_request_id"


def enqueue_on_commit(task: Any, *args: Any, **options: Any) -> None:
    """Sends ``task`` (the task object, imported: never a name) with ``args`` once the
    transaction commits. While the broker is
    away the send is logged and dropped rather than failing the request that committed: call
    it only for work a beat task picks up again from the database (``resume_requests`` for
    claim requests, ``retry_webhooks`` for deliveries) or that may be missed (a notice)."""

    def send() -> None:
        try:
            task.apply_async(args, **options)
        except BrokerUnavailable as error:
            logger.warning(
                "could not enqueue %s%r, the broker is away (%s); its beat task picks it up",
                task.name,
                args,
                error,
            )

    transaction.on_commit(send)


@signals.before_task_publish.connect(dispatch_uid="portal.celery.request_id_header")
def _send_request_id(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
    """The message carries the request id of the web request (or task) that enqueues it."""
    request_id = current_request_id()
    if request_id and headers is not None:
        headers.setdefault(REQUEST_ID_HEADER, request_id)


_task_contexts: dict[str, Any] = {}


@signals.task_prerun.connect(dispatch_uid="portal.celery.task_log_context")
def _enter_task_context(task_id: str = "", task: Any = None, **kwargs: Any) -> None:
    """A task's log lines name the task and the request id it was enqueued under (the
    header on a worker; in-process, the caller's own context carries it)."""
    request = getattr(task, "request", None)
    request_id = getattr(request, REQUEST_ID_HEADER, None) or (
        (getattr(request, "headers", None) or {}).get(REQUEST_ID_HEADER)
    )
    values: dict[str, Any] = {"task_name": getattr(task, "name", None), "task_id": task_id}
    if request_id:
        values["request_id"] = request_id
    context = log_context(**values)
    context.__enter__()
    _task_contexts[task_id] = context


@signals.task_postrun.connect(dispatch_uid="portal.celery.task_log_context_end")
def _leave_task_context(task_id: str = "", **kwargs: Any) -> None:
    context = _task_contexts.pop(task_id, None)
    if context is not None:
        context.__exit__(None, None, None)


@signals.task_prerun.connect(dispatch_uid="portal.celery.recycle_connections_before")
@signals.task_postrun.connect(dispatch_uid="portal.celery.recycle_connections_after")
def _recycle_connections(task: Any = None, **kwargs: Any) -> None:
    """On a worker, Django's rule for a kept connection (``close_old_connections``: closed
    when it failed, is unusable or is older than CONN_MAX_AGE). Not for a task run inline
    (eager), which runs inside the caller's transaction."""
    if task is None or getattr(task.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


@signals.worker_init.connect(dispatch_uid="portal.celery.metrics_server")
def _serve_worker_metrics(**kwargs: Any) -> None:
    """``METRICS_PORT``: the worker serves its metrics (every pool process's, with
    ``PROMETHEUS_MULTIPROC_DIR``) from its main process."""
    from django.conf import settings

    from portal.metrics import multiprocess_dir, prepare_multiprocess_dir, start_metrics_server

    if not settings.METRICS_PORT:
        return
    prepare_multiprocess_dir()
    if multiprocess_dir() is None:
        logger.warning(
            "METRICS_PORT without PROMETHEUS_MULTIPROC_DIR: only the worker's main process is "
            "measured; tasks run in pool processes (set it, or use --pool threads or solo)"
        )
    start_metrics_server(settings.METRICS_PORT)
    logger.info("serving metrics on port %s", settings.METRICS_PORT)


@signals.worker_process_shutdown.connect(dispatch_uid="portal.celery.metrics_process_dead")
def _forget_pool_process(pid: int | None = None, **kwargs: Any) -> None:
    from portal.metrics import multiprocess_dir

    if multiprocess_dir() is not None:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid or os.getpid())


def start_embedded_beat(
    stop: threading.Event,
    *,
    skip: Iterable[str] = (),
    schedule: dict[str, dict[str, Any]] | None = None,
    tick: float = 1.0,
) -> threading.Thread:
    """The embedded mode's beat (one process, no beat, tasks run inline): a daemon thread
    sends each entry of the beat schedule (``schedule``, default the one above) but those named
    in ``skip`` every ``schedule`` seconds, the first time one interval after it starts, as
    Celery beat does. A failing task is logged and the others keep their times."""
    entries = {
        name: entry
        for name, entry in (app.conf.beat_schedule if schedule is None else schedule).items()
        if name not in set(skip)
    }

    def loop() -> None:
        from django.db import close_old_connections

        due = {name: time.monotonic() + float(entry["schedule"]) for name, entry in entries.items()}
        while not stop.wait(tick):
            for name, entry in entries.items():
                if time.monotonic() < due[name]:
                    continue
                due[name] = time.monotonic() + float(entry["schedule"])
                try:
                    app.tasks[entry["task"]].apply_async(
                        entry.get("args", ()), entry.get("kwargs", {})
                    )
                except Exception:  # the beat outlives a failing task
                    logger.exception("embedded beat: %s failed", name)
                finally:
                    close_old_connections()

    thread = threading.Thread(target=loop, daemon=True, name="embedded-beat")
    thread.start()
    return thread
