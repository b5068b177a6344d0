"""PostgreSQL and Redis restarted under load, for real: the portal in production mode
(gunicorn with two workers, ``DEBUG=false``) against a throwaway PostgreSQL (initdb + pg_ctl
on a free port) and a throwaway redis-server. While either is away, pages and the API answer
503 with Retry-After (never a 500); within 30 s of its return everything answers again, by
itself. A Celery worker (prefork, two pool processes) serves its metrics on ``METRICS_PORT``
and logs its tasks in JSON with the request id that enqueued them.

The machine's shared PostgreSQL and Redis are never touched. About 40 s: marked slow; the fast
variant (closed ports, in-process) is ``test_service_unavailable.py``.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from apiemulator import Emulator
from harness.fixtures import fixture_objects
from harness.stack import (
    Postgres,
    Redis,
    Stack,
    fetch,
    free_port,
    signed_in,
    status_of,
    wait_for,
)
from tests.unavailable import unavailable

pytestmark = pytest.mark.slow

RECOVERY_SECONDS = 30


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    try:
        server = Postgres.create()
    except LookupError as error:
        unavailable(str(error))
    yield server
    server.destroy()


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory) -> Iterator[Redis]:
    try:
        server = Redis.create(tmp_path_factory.mktemp("redis"))
    except LookupError as error:
        unavailable(str(error))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def emulator() -> Iterator[Emulator]:
    with Emulator(port=0, bookmark_interval=0.5) as emulator:
        emulator.load(fixture_objects())
        yield emulator


@pytest.fixture(scope="module")
def portal(postgres, redis_server, emulator, tmp_path_factory) -> Iterator[Stack]:
    stack = Stack(postgres.url, redis_server.url, emulator.url, tmp_path_factory.mktemp("portal"))
    stack.prepare()
    try:
        stack.web(workers=2)
        yield stack
    finally:
        stack.stop_all()


class Load:
    """Pages and API requests in a loop from two threads; every status is counted."""

    def __init__(self, portal: Stack, opener) -> None:
        self.statuses: Counter[tuple[str, int]] = Counter()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        page = lambda: fetch(f"{portal.url}/claims/", opener)[0]  # noqa: E731
        api = lambda: status_of(  # noqa: E731
            f"{portal.url}/api/v1/claim-requests/", Authorization=f"Bearer {portal.token}"
        )
        self._threads = [
            threading.Thread(target=self._loop, args=("page", page), daemon=True),
            threading.Thread(target=self._loop, args=("api", api), daemon=True),
        ]

    def _loop(self, kind: str, request: Callable[[], int]) -> None:
        while not self._stop.is_set():
            status = request()
            with self._lock:
                self.statuses[(kind, status)] += 1
            time.sleep(0.05)

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)


def assert_503(portal: Stack, opener, service: str) -> None:
    status, headers, body = fetch(f"{portal.url}/claims/", opener)
    assert status == 503, (status, body[:300])
    assert headers["Retry-After"] == "5"
    assert b"unavailable for a moment" in body
    status, headers, body = fetch(
        f"{portal.url}/api/v1/claim-requests/", Authorization=f"Bearer {portal.token}"
    )
    assert status == 503
    assert headers["Retry-After"] == "5"
    assert json.loads(body)["error"]["code"] == "service_unavailable"
    assert status_of(f"{portal.url}/healthz") == 200
    status, _, body = fetch(f"{portal.url}/readyz?exclude=mirror,apiserver")
    assert status == 503
    assert json.loads(body)["checks"][service]["ok"] is False


def recovered(portal: Stack, opener) -> bool:
    return (
        fetch(f"{portal.url}/claims/", opener)[0] == 200
        and status_of(
            f"{portal.url}/api/v1/claim-requests/", Authorization=f"Bearer {portal.token}"
        )
        == 200
        and status_of(f"{portal.url}/readyz?exclude=mirror,apiserver") == 200
    )


def test_restarting_postgresql_and_redis_under_load_answers_503_then_recovers(
    portal, postgres, redis_server
):
    opener = signed_in(portal.url)
    assert recovered(portal, opener)
    with Load(portal, opener) as load:
        time.sleep(1)
        postgres.stop()
        wait_for(lambda: fetch(f"{portal.url}/claims/", opener)[0] == 503, 15, "pages 503")
        assert_503(portal, opener, "database")
        time.sleep(2)
        postgres.start()
        took = wait_for(lambda: recovered(portal, opener), RECOVERY_SECONDS, "database back")
        print(f"PostgreSQL back: answering again after {took:.1f} s")

        redis_server.stop()
        wait_for(lambda: fetch(f"{portal.url}/claims/", opener)[0] == 503, 15, "pages 503")
        assert_503(portal, opener, "redis")
        time.sleep(2)
        redis_server.start()
        took = wait_for(lambda: recovered(portal, opener), RECOVERY_SECONDS, "Redis back")
        print(f"Redis back: answering again after {took:.1f} s")
        time.sleep(1)
    statuses = dict(load.statuses)
    print("statuses under load:", statuses)
    assert {status for _, status in statuses} <= {200, 503}, statuses
    assert statuses.get(("page", 503)) and statuses.get(("api", 503))
    assert statuses.get(("page", 200)) and statuses.get(("api", 200))
    # The session and the token outlived both restarts: nothing to sign in again.
    assert fetch(f"{portal.url}/claims/", opener)[0] == 200


def test_the_web_adds_up_the_metrics_of_its_workers(portal):
    """Two gunicorn workers, one PROMETHEUS_MULTIPROC_DIR: every request is counted once,
    whichever worker answered it."""

    def healthz_count() -> float:
        _, _, body = fetch(f"{portal.url}/metrics")
        prefix = (
            "dra_portal_http_request_duration_seconds_count"
            '{method="GET",status="2xx",view="healthz"}'
        )
        lines = [line for line in body.decode().splitlines() if line.startswith(prefix)]
        return float(lines[0].split()[-1]) if lines else 0.0

    before = healthz_count()
    for _ in range(20):
        assert status_of(f"{portal.url}/healthz") == 200
    assert healthz_count() == before + 20


def test_a_worker_serves_the_metrics_of_its_pool_and_logs_the_enqueuing_request(portal):
    """A prefork worker with two pool processes: the claim it applies is counted in a pool
    process and served by the main one, and its log lines carry the id of the API request that
    submitted the claim."""
    portal.watchers("watchers")
    portal.wait_until_mirrored()
    metrics_port = free_port()
    portal.worker("allocator", "allocations", concurrency=2, metrics_port=metrics_port)
    metrics = f"http://127.0.0.1:{metrics_port}/metrics"
    wait_for(lambda: status_of(metrics) == 200, 60, "the worker's metrics endpoint")
    status, body = portal.api(
        "POST",
        "claim-requests/",
        {"namespace": "gpu-test1", "name": "metered", "device_class": "gpu.nvidia.com"},
        **{"X-Request-ID": "submitted-by-test"},
    )
    assert status == 201, body

    def applied() -> float:
        _, _, text = fetch(metrics)
        prefix = 'dra_portal_claim_apply_total{outcome="applied"}'
        lines = [line for line in text.decode().splitlines() if line.startswith(prefix)]
        return float(lines[0].split()[-1]) if lines else 0.0

    def task_lines() -> list[dict]:
        lines = portal.json_log("allocator")
        return [line for line in lines if line.get("task_name") == "claims.apply_request"]

    wait_for(lambda: applied() >= 1, 60, "an apply measured in a pool process")
    # The pool process counts the apply before its log lines reach the worker's log (on a
    # busy machine, a moment later).
    wait_for(lambda: bool(task_lines()), 30, "the apply's lines in the worker's log")
    assert {line["request_id"] for line in task_lines()} == {"submitted-by-test"}
