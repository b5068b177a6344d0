"""Exactly one watcher per kind across processes: the lock, its lease, and standbys that take
a kind over (the real processes killed and stopped: ``test_watcher_takeover.py``)."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from devices.models import DeviceClass
from kube.kinds import Kind
from mirror.locks import Lease, LocalWatcherLock, RedisWatcherLock, watcher_lock
from mirror.models import MirrorStatus
from mirror.watchers import keep_watching, run_watcher


@pytest.fixture
def redis_lock(redis_url):
    """``redis_lock(ttl)``: a lock on a key unique to this test; ``twin(lock)`` is another
    process's lock on the same kind."""
    made: list[RedisWatcherLock] = []

    def make(ttl: float = 30.0) -> RedisWatcherLock:
        lock = RedisWatcherLock(f"test-{uuid.uuid4()}", redis_url, ttl)
        made.append(lock)
        return lock

    yield make
    for lock in made:
        lock.release()


def twin(lock: RedisWatcherLock) -> RedisWatcherLock:
    other = RedisWatcherLock("unused", "redis://127.0.0.1:6379/0", lock.ttl_seconds)
    other.key, other._redis = lock.key, lock._redis
    return other


def wait_until(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_only_one_process_holds_a_kinds_redis_lock(redis_lock):
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
    assert not lock.renew()  # the old holder learns it lost the lock and stops watching
    successor.release()


def test_a_lease_keeps_the_lock_past_its_ttl_and_release_frees_it(redis_lock):
    lock = redis_lock(ttl=0.6)
    assert lock.acquire()
    with Lease(lock) as lease:
        time.sleep(1.5)  # two and a half TTLs, renewed every 0.2 s
        assert lease.is_held()
        assert not twin(lock).acquire()
    lock.release()
    assert not lock.is_held()


def test_a_lease_knows_at_once_when_another_process_took_the_lock(redis_lock):
    lock = redis_lock(ttl=0.6)
    assert lock.acquire()
    with Lease(lock) as lease:
        lock._redis.set(lock.key, "another-holder", px=5000)  # the key expired and was taken
        assert wait_until(lambda: not lease.is_held(), 1.0)


class Unreachable:
    """A lock whose renewals fail, as when Redis is away."""

    holder = "unreachable"
    ttl_seconds = 0.3

    def renew(self) -> bool:
        raise ConnectionError("Redis is away")


def test_a_lease_that_cannot_renew_for_a_whole_ttl_counts_as_lost():
    with Lease(Unreachable()) as lease:  # type: ignore[arg-type]
        assert lease.is_held()
        assert wait_until(lambda: not lease.is_held(), 1.0)


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


@pytest.mark.django_db(transaction=True)
def test_one_bounded_run_mirrors_then_lets_the_kind_go(emulator, settings):
    settings.KUBE_API_SERVER = emulator.url
    settings.WATCH_REQUEST_SECONDS = 1
    assert run_watcher(Kind.DEVICE_CLASSES, seconds=1) is True
    assert DeviceClass.objects.count() == 6
    assert MirrorStatus.objects.get(kind="deviceclasses").state == "stopped"
    assert not watcher_lock(Kind.DEVICE_CLASSES.value).is_held()


@pytest.mark.django_db(transaction=True)
def test_a_standby_takes_the_kind_once_its_holder_lets_go(emulator, settings):
    settings.KUBE_API_SERVER = emulator.url
    settings.WATCH_REQUEST_SECONDS = 1
    settings.WATCHER_STANDBY_SECONDS = 0.1
    held = watcher_lock(Kind.DEVICE_CLASSES.value)
    assert held.acquire()
    stop = threading.Event()
    standby = threading.Thread(target=keep_watching, args=(Kind.DEVICE_CLASSES, stop))
    standby.start()
    try:
        time.sleep(0.5)
        assert DeviceClass.objects.count() == 0  # standing by: mirrors nothing
        held.release()
        assert wait_until(lambda: DeviceClass.objects.count() == 6, 10)
        watcher = MirrorStatus.objects.get(kind="deviceclasses").watcher
        assert watcher and held.holder[:8] not in watcher
    finally:
        stop.set()
        standby.join(timeout=10)
    assert not standby.is_alive()
    assert not watcher_lock(Kind.DEVICE_CLASSES.value).is_held()  # stopping hands it over


@pytest.mark.django_db(transaction=True)
def test_an_unreadable_cluster_configuration_is_reported_and_tried_again(settings, tmp_path):
    settings.KUBE_API_SERVER = ""
    settings.KUBECONFIG = str(tmp_path / "missing-kubeconfig")
    stop = threading.Event()
    thread = threading.Thread(target=keep_watching, args=(Kind.NODES, stop))
    thread.start()
    try:
        assert wait_until(lambda: MirrorStatus.objects.filter(kind="nodes").exists(), 5)
        assert wait_until(lambda: MirrorStatus.objects.get(kind="nodes").error_count >= 1, 5)
        status = MirrorStatus.objects.get(kind="nodes")
        assert "cannot configure cluster" in status.last_error
        assert thread.is_alive()  # it tries again rather than dying
    finally:
        stop.set()
        thread.join(timeout=10)
