"""When the database or Redis is away: which failures are an outage, and the 503 that answers
them (docs/operations.md).

A restarting PostgreSQL or Redis makes a request fail with a connection error, not with a bug;
the answer is ``503 Service Unavailable`` with ``Retry-After``: the portal's own page, or the
API's error format under ``/api/`` (``portal.middleware.ServiceUnavailableMiddleware`` and
``handler500``). Nothing has to be reset to recover: Django opens a new database connection
on the next request (``CONN_HEALTH_CHECKS`` drops a broken persistent one first) and redis-py
and kombu reconnect on the next command.
"""

from __future__ import annotations

import redis
from django.db import InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerError

__all__ = ["RETRY_AFTER_SECONDS", "outage_of"]

RETRY_AFTER_SECONDS = 5
# SQLSTATE classes and codes of a database that is away or cannot take the work now:
# connection exceptions (08), operator intervention (57P01 admin shutdown, 57P02 crash
# shutdown, 57P03 cannot connect now), insufficient resources (53: too many connections),
# serialization failure and deadlock (40001, 40P01: retrying succeeds).
_TRANSIENT_SQLSTATES = ("08", "57P", "53", "40001", "40P01")
# SQLite's words for a database that is busy or cannot be opened.
_TRANSIENT_SQLITE = ("database is locked", "unable to open database file", "disk i/o error")


def _database_is_away(error: BaseException) -> bool:
    if isinstance(error, InterfaceError):
        return True  # the connection is already closed
    if not isinstance(error, OperationalError):
        return False
    cause = error.__cause__
    sqlstate = getattr(cause, "sqlstate", "no sqlstate")
    if sqlstate is None:
        return True  # psycopg: no server answered (refused, reset, timed out)
    if sqlstate != "no sqlstate":
        return str(sqlstate).startswith(_TRANSIENT_SQLSTATES)
    return any(words in str(error).lower() for words in _TRANSIENT_SQLITE)


def outage_of(error: BaseException) -> str | None:
    """``"database"`` or ``"redis"`` when ``error`` means that service is away (or refuses
    work for a moment), else None: a programming error stays a 500."""
    if _database_is_away(error):
        return "database"
    if isinstance(error, redis.ConnectionError | redis.TimeoutError | BrokerError):
        return "redis"
    return None
