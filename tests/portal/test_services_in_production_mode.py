"""The production path: PostgreSQL and Redis for real (skipped locally, required in CI)."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection

from portal.celery import app


def test_the_suite_runs_on_postgresql(postgres):
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("select 1")
        assert cursor.fetchone() == (1,)


def test_the_cache_is_redis(redis_url):
    cache.set("dra-portal-test", {"ok": True}, 10)
    assert cache.get("dra-portal-test") == {"ok": True}


def test_celery_talks_to_the_redis_broker(redis_url):
    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1)
        assert conn.transport_cls in ("redis", "rediss")


@pytest.mark.parametrize("queue", ["default", "telemetry", "allocations", "backstop"])
def test_celery_has_a_queue_per_kind_of_work(queue):
    assert queue in {q.name for q in app.conf.task_queues}
    assert app.conf.task_serializer == "json"
