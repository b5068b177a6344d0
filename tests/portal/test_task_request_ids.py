"""A task's log context names the task and carries the request id of whoever enqueued it,
through a real broker and worker (kombu's in-memory transport, a worker thread)."""

from __future__ import annotations

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker

from portal.logs import context, current_request_id, log_context


@pytest.fixture
def worker_app():
    app = Celery("request-ids", broker="memory://", backend="cache+memory://")
    app.conf.task_always_eager = False

    @app.task(name="tests.log_context")
    def log_context_task() -> dict:
        values = context()
        return {key: values.get(key) for key in ("request_id", "task_name", "task_id")}

    # The worker marks the process as one whose results must not be waited on (celery's
    # ``task_join_will_block``), and its thread may do so after ``start_worker`` unmarked it:
    # the tests below wait on results as the callers outside any task that they are
    # (tests/conftest.py unmarks the process before each test).
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        yield app, log_context_task


def test_a_task_runs_under_the_request_id_that_enqueued_it(worker_app):
    _, task = worker_app
    with log_context(request_id="web-request-1"):
        result = task.delay()
    values = result.get(timeout=20, disable_sync_subtasks=False)
    assert values["request_id"] == "web-request-1"
    assert values["task_name"] == "tests.log_context"
    assert values["task_id"] == result.id


def test_a_task_enqueued_outside_a_request_has_none(worker_app):
    _, task = worker_app
    assert current_request_id() is None
    values = task.delay().get(timeout=20, disable_sync_subtasks=False)
    assert values["request_id"] is None
    assert values["task_name"] == "tests.log_context"


def test_in_process_tasks_keep_the_callers_request_id():
    """The embedded mode runs tasks inline: the web request's context is simply still there."""
    app = Celery("inline")
    app.conf.task_always_eager = True

    @app.task(name="tests.inline_context")
    def inline() -> dict:
        return context()

    with log_context(request_id="web-request-2"):
        values = inline.delay().get()
    assert values["request_id"] == "web-request-2"
    assert values["task_name"] == "tests.inline_context"
    assert context() == {}
