"""Readiness checks of what the portal itself stands on: the database and Redis
(``/readyz``, docs/operations.md). Each answers a :class:`Check` quickly, never raises, and
says why in words that name no secret (no URL, no password: the reason is read anonymously).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection

__all__ = ["Check", "database_check", "reason_for", "redis_check"]

# user:password@ in a URL, and bearer tokens: never in a reason.
_CREDENTIALS = re.compile(r"(?i)([a-z][a-z0-9+.-]*://)[^/@\s]+@|bearer\s+\S+")


@dataclass(frozen=True)
class Check:
    ok: bool
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "reason": self.reason, **self.details}


def reason_for(error: BaseException) -> str:
    """A short reason for a failed check: the error's first line, credentials removed."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    text = _CREDENTIALS.sub(lambda m: (m.group(1) or "") + ("***@" if m.group(1) else "***"), text)
    return f"{type(error).__name__}: {text}"[:300]


def database_check() -> Check:
    """``SELECT 1`` on the request's connection (a new connection when the last one broke:
    Django's health check drops it). Waits at most ``DATABASE_CONNECT_TIMEOUT`` to connect."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as error:
        return Check(False, reason_for(error))
    return Check(True)


_redis_clients: dict[str, Any] = {}
_redis_lock = threading.Lock()


def redis_check() -> Check:
    """``PING`` with ``READYZ_TIMEOUT_SECONDS`` to connect and to answer. Without
    ``REDIS_URL`` (the embedded mode) there is nothing to check."""
    url = settings.REDIS_URL
    if not url:
        return Check(True, "not configured: tasks run in-process")
    import redis

    with _redis_lock:
        client = _redis_clients.get(url)
        if client is None:
            timeout = settings.READYZ_TIMEOUT_SECONDS
            client = redis.Redis.from_url(
                url, socket_connect_timeout=timeout, socket_timeout=timeout
            )
            _redis_clients[url] = client
    try:
        client.ping()
    except redis.RedisError as error:
        return Check(False, reason_for(error))
    return Check(True)
