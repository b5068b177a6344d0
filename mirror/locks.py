"""Exactly one active watcher per kind across all watcher processes.

With Redis (production) the lock is a key with a TTL (``WATCHER_LOCK_TTL``) that its holder
renews from a thread of its own (:class:`Lease`, every third of the TTL, whatever the watcher is
busy with: a relist at 5,000 nodes outlasts the TTL); a holder that dies stops renewing and the
key expires, and a standby watcher takes the kind within a poll. Without Redis (the embedded
mode, one process) a process-local lock does the same job.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from types import TracebackType
from typing import Protocol

from django.conf import settings

__all__ = ["Lease", "WatcherLock", "watcher_lock"]

logger = logging.getLogger(__name__)

_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""


class WatcherLock(Protocol):
    holder: str
    ttl_seconds: float

    def acquire(self) -> bool: ...
    def renew(self) -> bool: ...
    def release(self) -> None: ...
    def is_held(self) -> bool: ...


class RedisWatcherLock:
    def __init__(self, name: str, url: str, ttl_seconds: float = 30.0) -> None:
        import redis

        self.key = f"{settings.WATCHER_LOCK_PREFIX}{name}"
        self.ttl_seconds = ttl_seconds
        self.ttl_ms = int(ttl_seconds * 1000)
        self.holder = f"{uuid.uuid4()}"
        # Timeouts under the TTL: a renewal that hangs must not outlive the lock unnoticed.
        timeout = max(0.5, min(5.0, ttl_seconds / 3))
        self._redis = redis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout
        )

    def acquire(self) -> bool:
        return bool(self._redis.set(self.key, self.holder, nx=True, px=self.ttl_ms))

    def renew(self) -> bool:
        """Extends the TTL if still held; False once another holds it or it expired."""
        return bool(self._redis.eval(_RENEW, 1, self.key, self.holder, self.ttl_ms))

    def release(self) -> None:
        self._redis.eval(_RELEASE, 1, self.key, self.holder)

    def is_held(self) -> bool:
        return bool(self._redis.exists(self.key))


class LocalWatcherLock:
    _held: dict[str, str] = {}
    _guard = threading.Lock()
    ttl_seconds = 30.0  # nothing expires in one process; the lease just checks this often

    def __init__(self, name: str) -> None:
        self.name = f"{settings.WATCHER_LOCK_PREFIX}{name}"
        self.holder = f"{uuid.uuid4()}"

    def acquire(self) -> bool:
        with self._guard:
            if self.name in self._held:
                return False
            self._held[self.name] = self.holder
            return True

    def renew(self) -> bool:
        return self._held.get(self.name) == self.holder

    def release(self) -> None:
        with self._guard:
            if self._held.get(self.name) == self.holder:
                del self._held[self.name]

    def is_held(self) -> bool:
        return self.name in self._held


class Lease:
    """Keeps ``lock`` (acquired by the caller) renewed from a daemon thread while the ``with``
    block runs. :meth:`is_held` answers without a round trip: False once a renewal found the
    lock taken or expired, or when no renewal has succeeded for a whole TTL (Redis away: the
    key may have expired meanwhile, so the holder must assume another took over)."""

    def __init__(self, lock: WatcherLock) -> None:
        self.lock = lock
        self._lost = threading.Event()
        self._done = threading.Event()
        self._renewed_at = time.monotonic()
        self._thread = threading.Thread(target=self._renew, daemon=True, name="watcher-lease")

    def is_held(self) -> bool:
        if time.monotonic() - self._renewed_at >= self.lock.ttl_seconds:
            self._lost.set()
        return not self._lost.is_set()

    def _renew(self) -> None:
        interval = self.lock.ttl_seconds / 3
        while not self._done.wait(interval) and not self._lost.is_set():
            try:
                renewed = self.lock.renew()
            except Exception as error:  # Redis away: try again until the TTL has passed
                logger.warning("watcher lock %s: renewal failed: %s", self.lock.holder[:8], error)
                self.is_held()
                continue
            if renewed:
                self._renewed_at = time.monotonic()
            else:
                logger.warning("watcher lock %s: lost to another watcher", self.lock.holder[:8])
                self._lost.set()

    def __enter__(self) -> Lease:
        self._renewed_at = time.monotonic()
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._done.set()
        self._thread.join(timeout=self.lock.ttl_seconds)


def watcher_lock(name: str) -> WatcherLock:
    if settings.REDIS_URL:
        return RedisWatcherLock(name, settings.REDIS_URL, settings.WATCHER_LOCK_TTL)
    return LocalWatcherLock(name)
