"""gunicorn reads this file from its working directory (the image's /app) by itself.

Metrics (docs/operations.md): with ``PROMETHEUS_MULTIPROC_DIR`` set, every worker writes its
samples to that directory and ``/metrics`` adds them up; the directory is emptied when the
server starts (a restarted container keeps its emptyDir) and a worker that exits is marked dead
so its live gauges go. Logs: with ``LOG_FORMAT=json`` gunicorn's own lines are JSON too, and
its access log gives way to the portal's (``portal.access``, with the request id) unless
``LOG_REQUESTS=false``.
"""

from __future__ import annotations

import os
from typing import Any


def on_starting(server: Any) -> None:
    from portal.metrics import prepare_multiprocess_dir

    prepare_multiprocess_dir()


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


if os.environ.get("LOG_FORMAT", "").strip().lower() == "json":
    _portal_logs_requests = os.environ.get("LOG_REQUESTS", "true").strip().lower() in (
        "1",
        "true",
        "yes",
        "on",
    )
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": "portal.logs.ContextFilter"}},
        "formatters": {"json": {"()": "portal.logs.JsonFormatter"}},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "filters": ["context"],
                "stream": "ext://sys.stdout",
            }
        },
        "loggers": {
            "gunicorn.error": {"handlers": ["console"], "level": "INFO", "propagate": False},
            "gunicorn.access": {
                "handlers": [] if _portal_logs_requests else ["console"],
                "level": "INFO",
                "propagate": False,
            },
        },
    }
