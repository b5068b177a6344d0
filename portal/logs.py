"""What a log line says about where it came from: the request id, the user, the path, and in
Celery tasks the task and the request id of the web request that enqueued it.

The context lives in context variables, set by ``portal.middleware.RequestIdMiddleware`` for a
web request and by the Celery signal handlers in ``portal.celery`` for a task; ``ContextFilter``
(on the console handler, ``settings.LOGGING``) copies it onto every record, and
``JsonFormatter`` writes one JSON object per line (``LOG_FORMAT=json``). Nothing here touches
the database: a line logged while the database is away must still be written.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import re
import uuid
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

__all__ = [
    "ContextFilter",
    "JsonFormatter",
    "context",
    "current_request_id",
    "log_context",
    "request_id_from",
]

# An incoming X-Request-ID is kept when it looks like an id (a UUID, a trace id, a proxy's
# token); anything else (too long, spaces, control characters) is replaced by a fresh one, so
# a client cannot write into the logs through it.
REQUEST_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+/=-]{0,127}")

_context: ContextVar[dict[str, Any] | None] = ContextVar("dra_portal_log_context", default=None)

# Keys of the context, in the order a JSON line lists them.
CONTEXT_KEYS = ("request_id", "user", "path", "method", "task_name", "task_id")
# Attributes every LogRecord has; whatever else a record carries came from ``extra=``.
_RECORD_ATTRIBUTES = frozenset(
    logging.LogRecord("", 0, "", 0, "", (), None).__dict__.keys()
    | {"message", "asctime", "context", "request", "server_time"}
    | set(CONTEXT_KEYS)
)


def request_id_from(header: str | None) -> str:
    """The request id to use: ``header`` when it is a well-formed id, else a new one."""
    if header and REQUEST_ID_PATTERN.fullmatch(header):
        return header
    return uuid.uuid4().hex


def current_request_id() -> str | None:
    """The request id of the web request being served, or of the one that enqueued the task
    being run; None outside both (a beat task, a management command)."""
    request_id = (_context.get() or {}).get("request_id")
    return str(request_id) if request_id else None


def context() -> dict[str, Any]:
    """The current log context (a copy)."""
    return dict(_context.get() or {})


@contextlib.contextmanager
def log_context(**values: Any) -> Iterator[None]:
    """Adds ``values`` to the log context for the duration of the block."""
    token = _context.set({**(_context.get() or {}), **values})
    try:
        yield
    finally:
        _context.reset(token)


def _user_id(request: Any) -> int | str | None:
    """The signed-in user's id, only if the request already knows who it is: reading a lazy
    ``request.user`` here would query the session (and fail while the database is away)."""
    user = getattr(request, "user", None) if request is not None else None
    if user is None:
        return None
    wrapped = getattr(user, "_wrapped", user)
    from django.utils.functional import empty

    if wrapped is empty or not getattr(wrapped, "is_authenticated", False):
        return None
    pk: int | str | None = getattr(wrapped, "pk", None)
    return pk


class ContextFilter(logging.Filter):
    """Copies the log context onto each record (``request_id``, ``user``, ``path``,
    ``task_name``, ``task_id``; None where unknown) and a short ``context`` suffix for the
    text format. Never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        values = _context.get() or {}
        request = getattr(record, "request", None)
        if not values and request is not None:
            # django.request logs a 4xx/5xx answer after the middleware returned it, with the
            # request attached: its id is on it (``RequestIdMiddleware``).
            values = {
                "request_id": getattr(request, "request_id", None),
                "request": request,
                "path": getattr(request, "path", None),
                "method": getattr(request, "method", None),
            }
        for key in CONTEXT_KEYS:
            if key != "user":
                setattr(record, key, values.get(key))
        record.user = _user_id(values.get("request"))
        parts = [f"request {values['request_id']}"] if values.get("request_id") else []
        if values.get("task_name"):
            parts.append(f"task {values['task_name']}[{values.get('task_id')}]")
        record.context = f" ({', '.join(parts)})" if parts else ""
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``,
    the context (``request_id``, ``user``, ``path``, ``method``, ``task_name``, ``task_id``),
    ``exception`` when there is one, and whatever the call passed as ``extra``."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in CONTEXT_KEYS:
            line[key] = getattr(record, key, None)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        for key, value in record.__dict__.items():
            if key not in _RECORD_ATTRIBUTES and key not in line and not key.startswith("_"):
                line[key] = value
        return json.dumps(line, default=str, ensure_ascii=False)
