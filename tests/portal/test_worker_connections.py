"""Workers keep their database connection across tasks, as the web does (CONN_MAX_AGE), and drop
one that broke (a restarted PostgreSQL) before the next task uses it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.db import connection

from portal.celery import _recycle_connections, app

pytestmark = pytest.mark.django_db(transaction=True)
ON_A_WORKER = SimpleNamespace(request=SimpleNamespace(is_eager=False))
INLINE = SimpleNamespace(request=SimpleNamespace(is_eager=True))


def test_celery_does_not_close_the_connection_after_each_task():
    assert app.conf.get("CELERY_DB_REUSE_MAX", 0) >= 100_000


def test_a_healthy_connection_is_kept_from_task_to_task(postgres):
    connection.ensure_connection()
    kept = connection.connection
    _recycle_connections(task=ON_A_WORKER)
    _recycle_connections(task=ON_A_WORKER)
    assert connection.connection is kept


def test_a_broken_connection_is_dropped_before_the_next_task(postgres):
    connection.ensure_connection()
    connection.connection.close()  # what a PostgreSQL restart leaves behind
    connection.errors_occurred = True
    _recycle_connections(task=ON_A_WORKER)
    assert connection.connection is None
    with connection.cursor() as cursor:  # the next task connects afresh
        cursor.execute("select 1")
        assert cursor.fetchone() == (1,)


def test_a_task_run_inline_leaves_the_callers_connection_alone(postgres):
    connection.ensure_connection()
    connection.connection.close()
    connection.errors_occurred = True
    _recycle_connections(task=INLINE)
    assert connection.connection is not None
    connection.errors_occurred = False
    connection.close()
