"""The Celery application.

Tasks are thin (STYLE §14): ids in, rows loaded, a service called. They use Celery's Django task
class so ``task.delay_on_commit(...)`` enqueues only once the surrounding transaction commits.
Queues are named for their work so operators can size workers per kind of work:
``default`` (lifecycle: apply, release, expiry, idle claims), ``watchers`` (long-running cluster
watches) and
``telemetry`` (exporter scrapes and rollups), ``allocations`` (reservations: exactly one
consumer, so they are decided one at a time against one warm index) and ``backstop`` (the
ResourceQuota backstop: in a cluster its worker alone holds the right to write ResourceQuotas,
docs/deploy.md).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable
from typing import Any

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal", task_cls="celery.contrib.django.task:DjangoTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (
    Queue("default"),
    Queue("watchers"),
    Queue("telemetry"),
    Queue("allocations"),
    Queue("backstop"),
)
app.conf.task_routes = {
    "devices.tasks.watch_*": {"queue": "watchers"},
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
    # Restart watchers whose lock expired (their worker died) or that never started.
    "ensure-watchers": {"task": "devices.tasks.ensure_watchers", "schedule": 30.0},
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
    # Idle claims: flag / unflag (and tell owners), then reclaim those past their grace period
    # where the tenant's idle policy says so. Lifecycle work: the default queue.
    "claims-sweep-idle": {"task": "claims.sweep_idle", "schedule": 120.0},
    "claims-reclaim-idle": {"task": "claims.reclaim_idle", "schedule": 120.0},
}
app.autodiscover_tasks()

logger = logging.getLogger(__name__)


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
