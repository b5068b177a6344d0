"""Exactly one active watcher per kind across all workers.

With Redis (production) the lock is a key with a TTL that its holder renews; a holder that dies
stops renewing and the key expires, so beat can start a replacement. Without Redis (the
embedded mode, one process) a process-local lock does the same job.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Protocol

from django.conf import settings

__all__ = ["WatcherLock", "watcher_lock"]

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

    def acquire(self) -> bool: ...
    def renew(self) -> bool: ...
    def release(self) -> None: ...
    def is_held(self) -> bool: ...


class RedisWatcherLock:
    def __init__(self, name: str, url: str, ttl_seconds: float = 30.0) -> None:
        import redis

        self.key = f"{settings.WATCHER_LOCK_PREFIX}{name}"
        self.ttl_ms = int(ttl_seconds * 1000)
        self.holder = f"{uuid.uuid4()}"
        self._redis = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        self._last_renewal = 0.0

    def acquire(self) -> bool:
        acquired = bool(self._redis.set(self.key, self.holder, nx=True, px=self.ttl_ms))
        self._last_renewal = time.monotonic()
        return acquired

    def renew(self) -> bool:
        """Extends the TTL if still held (at most every third of the TTL); False once lost."""
        if time.monotonic() - self._last_renewal < self.ttl_ms / 3000:
            return True
        self._last_renewal = time.monotonic()
        return bool(self._redis.eval(_RENEW, 1, self.key, self.holder, self.ttl_ms))

    def release(self) -> None:
        self._redis.eval(_RELEASE, 1, self.key, self.holder)

    def is_held(self) -> bool:
        return bool(self._redis.exists(self.key))


class LocalWatcherLock:
    _held: dict[str, str] = {}
    _guard = threading.Lock()

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


def watcher_lock(name: str) -> WatcherLock:
    if settings.REDIS_URL:
        return RedisWatcherLock(name, settings.REDIS_URL, settings.WATCHER_LOCK_TTL)
    return LocalWatcherLock(name)
