"""Exactly one watcher per kind across workers, and beat restarting dead ones."""

from __future__ import annotations

import time
import uuid

import pytest

from mirror import tasks
from mirror.cluster import Kind
from mirror.locks import LocalWatcherLock, RedisWatcherLock, watcher_lock
from mirror.mapping import MIRRORED_KINDS
from mirror.watchers import run_watcher


@pytest.fixture
def redis_lock(redis_url):
    """``redis_lock(ttl)``: a lock on a key unique to this test; ``twin(lock)`` is another
    worker's lock on the same kind."""
    made: list[RedisWatcherLock] = []

    def make(ttl: float = 30.0) -> RedisWatcherLock:
        lock = RedisWatcherLock(f"test-{uuid.uuid4()}", redis_url, ttl)
        made.append(lock)
        return lock

    yield make
    for lock in made:
        lock.release()


def twin(lock: RedisWatcherLock) -> RedisWatcherLock:
    other = RedisWatcherLock("unused", "redis://127.0.0.1:6379/0", lock.ttl_ms / 1000)
    other.key, other._redis = lock.key, lock._redis
    return other


def test_only_one_worker_holds_a_kinds_redis_lock(redis_lock):
    first = redis_lock()
    second = twin(first)
    assert first.acquire()
    assert not second.acquire()
    assert first.is_held() and second.is_held()
    second.release()  # not its lock: releasing must not free it
    assert first.is_held()


def test_a_holder_that_stops_renewing_loses_the_lock(redis_lock):
    lock = redis_lock(ttl=0.3)
    assert lock.acquire()
    time.sleep(0.5)
    assert not lock.is_held()
    successor = twin(lock)
    assert successor.acquire()
    lock._last_renewal = 0
    assert not lock.renew()  # the old holder learns it lost the lock and stops watching
    successor.release()


def test_renewing_keeps_the_lock_and_release_frees_it(redis_lock):
    lock = redis_lock(ttl=0.6)
    assert lock.acquire()
    for _ in range(4):
        time.sleep(0.25)
        lock._last_renewal = 0
        assert lock.renew()
    assert lock.is_held()
    lock.release()
    assert not lock.is_held()


def test_the_local_lock_serves_the_embedded_mode():
    first, second = LocalWatcherLock("k"), LocalWatcherLock("k")
    assert first.acquire()
    assert not second.acquire()
    first.release()
    assert second.acquire()
    second.release()


@pytest.mark.django_db
def test_a_watcher_does_nothing_while_another_holds_its_kind():
    held = watcher_lock(Kind.RESOURCE_SLICES.value)
    assert held.acquire()
    try:
        assert run_watcher(Kind.RESOURCE_SLICES, seconds=1) is False
    finally:
        held.release()


def test_beat_starts_watchers_only_for_unheld_kinds(monkeypatch):
    started = []
    monkeypatch.setattr(
        tasks.watch_kind, "apply_async", lambda args, queue: started.append((args[0], queue))
    )
    held = watcher_lock(Kind.NODES.value)
    assert held.acquire()
    try:
        result = tasks.ensure_watchers()
    finally:
        held.release()
    assert Kind.NODES.value not in result
    assert sorted(result) == sorted(k.value for k in MIRRORED_KINDS if k != Kind.NODES)
    assert {queue for _, queue in started} == {"watchers"}


@pytest.mark.django_db(transaction=True)
def test_the_watch_task_mirrors_then_hands_over(emulator, settings, monkeypatch):
    settings.KUBE_API_SERVER = emulator.url
    settings.WATCH_RUN_SECONDS = 1
    settings.WATCH_REQUEST_SECONDS = 1
    handed_over = []
    monkeypatch.setattr(
        tasks.watch_kind, "apply_async", lambda args, queue: handed_over.append(args)
    )
    assert tasks.watch_kind.run(Kind.DEVICE_CLASSES.value) == "ran"
    from devices.models import DeviceClass
    from mirror.models import MirrorStatus

    assert DeviceClass.objects.count() == 6
    assert handed_over == [(Kind.DEVICE_CLASSES.value,)]
    assert MirrorStatus.objects.get(kind="deviceclasses").state == "stopped"


@pytest.mark.django_db
def test_an_unreachable_cluster_configuration_is_reported_on_the_status(settings, tmp_path):
    settings.KUBE_API_SERVER = ""
    settings.KUBECONFIG = str(tmp_path / "missing-kubeconfig")
    assert tasks.watch_kind.run(Kind.NODES.value) == "failed"
    from mirror.models import MirrorStatus

    status = MirrorStatus.objects.get(kind="nodes")
    assert status.error_count == 1
    assert "cannot configure cluster" in status.last_error
