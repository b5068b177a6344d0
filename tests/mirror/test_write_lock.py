"""The slice and claim watchers write the same device-state and allocation-result rows; on
PostgreSQL every transaction that writes slices or claims holds one advisory lock until it ends,
so the two serialize instead of deadlocking (seen under a mixed watch load: slice updates
relinking results while claim batches replaced them, in different row orders)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections, transaction

from devices.locks import _DEVICE_WRITES_LOCK
from harness.fixtures import fixture_objects
from kube.kinds import Kind
from mirror.store import apply_events


@pytest.fixture
def postgres_threads(transactional_db):
    if connection.vendor != "postgresql":
        from tests.unavailable import unavailable

        unavailable("PostgreSQL is not configured (set DATABASE_URL=postgres://...)")


def _lock_free_elsewhere() -> bool:
    """Whether another connection can take the lock right now."""
    answer: list[bool] = []

    def probe() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [_DEVICE_WRITES_LOCK])
                answer.append(cursor.fetchone()[0])
        finally:
            connections.close_all()

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join(10)
    return answer[0]


@pytest.mark.parametrize(
    ("kind", "object_kind"),
    [(Kind.RESOURCE_SLICES, "ResourceSlice"), (Kind.RESOURCE_CLAIMS, "ResourceClaim")],
)
def test_writing_slices_or_claims_holds_the_device_writes_lock(postgres_threads, kind, object_kind):
    objects = [o for o in fixture_objects() if o["kind"] == object_kind][:2]
    assert objects
    assert _lock_free_elsewhere()
    with transaction.atomic():
        apply_events(kind, [{"type": "ADDED", "object": o} for o in objects])
        assert not _lock_free_elsewhere()
    assert _lock_free_elsewhere()  # released with the transaction


def test_other_kinds_do_not_take_it(postgres_threads):
    classes = [o for o in fixture_objects() if o["kind"] == "DeviceClass"][:2]
    with transaction.atomic():
        apply_events(Kind.DEVICE_CLASSES, [{"type": "ADDED", "object": o} for o in classes])
        assert _lock_free_elsewhere()
