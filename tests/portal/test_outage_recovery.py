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

import contextlib
import glob
import http.cookiejar
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from apiemulator import Emulator
from mirror.cluster import Cluster, ClusterConfig, Kind
from tests.mirror.conftest import fixture_objects

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
RECOVERY_SECONDS = 30
PASSWORD = "outage-test-password-1"  # noqa: S105 - a throwaway database's user


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> float:
    """Polls ``condition`` until it holds; answers how long that took."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > seconds:
            raise AssertionError(f"{what}: not within {seconds} s")
        time.sleep(0.2)
    return time.monotonic() - started


def stop_process(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


# -- throwaway services ------------------------------------------------------------------------


@dataclass
class Postgres:
    folder: Path
    port: int
    bin: Path
    user: str | None  # run as this user (initdb refuses root)

    def _run(self, *args: str) -> None:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.user:
            command = ["runuser", "-u", self.user, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, f"{args[0]}: {result.stdout}{result.stderr}"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.folder / "log")
        self._run(
            "pg_ctl", "-D", str(self.folder / "data"), "-o", options, "-l", log, "-w", "start"
        )

    def stop(self) -> None:
        # -m fast: clients are disconnected at once, as in a restart or a failover.
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop")

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/portal"


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb")) or [shutil.which("initdb")]
    if not found[-1]:
        pytest.skip("PostgreSQL's server binaries (initdb, pg_ctl) are not installed")
    user = None
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres").pw_name
        except KeyError:
            pytest.skip("running as root and there is no postgres user to run initdb as")
    # Not under pytest's folder: that one is private to root, and the server runs as postgres.
    folder = Path(tempfile.mkdtemp(prefix="dra-portal-postgres-"))
    if user:
        shutil.chown(folder, user)
    server = Postgres(folder, free_port(), Path(found[-1]).parent, user)
    server._run("initdb", "-D", str(folder / "data"), "-U", "postgres", "--auth=trust", "-N")
    server.start()
    import psycopg

    with psycopg.connect(
        f"host=127.0.0.1 port={server.port} user=postgres dbname=postgres", autocommit=True
    ) as connection:
        connection.execute("CREATE DATABASE portal")
    yield server
    with contextlib.suppress(AssertionError):  # already stopped
        server.stop()
    shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Redis:
    folder: Path
    port: int
    process: subprocess.Popen | None = None

    def start(self) -> None:
        # Append-only, as in docker-compose.yml: what was queued survives the restart.
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.folder),
                "--appendonly",
                "yes",
                "--save",
                "",
            ],
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for(self._answers, 10, "redis-server started")

    def _answers(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(port=self.port, socket_connect_timeout=1).ping())
        except redis.RedisError:
            return False

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory) -> Iterator[Redis]:
    if not shutil.which("redis-server"):
        pytest.skip("redis-server is not installed")
    server = Redis(tmp_path_factory.mktemp("redis"), free_port())
    server.start()
    yield server
    server.stop()


# -- the portal in production mode ---------------------------------------------------------------


@dataclass
class Portal:
    url: str
    env: dict[str, str]
    token: str
    processes: list[subprocess.Popen] = field(default_factory=list)


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def emulator() -> Iterator[Emulator]:
    with Emulator(port=0, bookmark_interval=0.5) as emulator:
        emulator.load(fixture_objects())
        yield emulator


@pytest.fixture(scope="module")
def portal(postgres, redis_server, emulator, tmp_path_factory) -> Iterator[Portal]:
    var = tmp_path_factory.mktemp("portal")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DATABASE_URL", "REDIS_URL", "KUBE", "DJANGO_", "LOG_", "PYTEST"))
    }
    env.update(
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1,localhost",
        DATABASE_URL=postgres.url,
        REDIS_URL=redis_server.url,
        SECURE_SSL_REDIRECT="false",
        STATIC_ROOT=str(var / "static"),
        PORTAL_VAR_DIR=str(var),
        KUBE_API_SERVER=emulator.url,
        DATABASE_CONNECT_TIMEOUT="2",
        REDIS_TIMEOUT_SECONDS="2",
        LOG_FORMAT="json",
        WATCH_REQUEST_SECONDS="5",
    )
    manage(env, "migrate", "--no-input")
    manage(env, "collectstatic", "--no-input", "--verbosity", "0")
    token = (
        manage(
            env,
            "shell",
            "-c",
            "from django.contrib.auth.models import User\n"
            "from portal.services.api_tokens import issue_api_token\n"
            f"bob = User.objects.create_user('bob', password='{PASSWORD}')\n"
            "print(issue_api_token(user=bob, name='outage', lifetime=None).secret)",
        )
        .strip()
        .splitlines()[-1]
    )
    port = free_port()
    web_env = {**env, "PROMETHEUS_MULTIPROC_DIR": str(var / "web-metrics")}
    web = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "portal.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--timeout",
            "60",
        ],
        cwd=ROOT,  # gunicorn.conf.py is read from here
        env=web_env,
        stdout=open(var / "web.log", "w"),  # noqa: SIM115 - closed with the process
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deployed = Portal(f"http://127.0.0.1:{port}", env, token, [web])
    try:
        wait_for(lambda: status_of(f"{deployed.url}/healthz") == 200, 60, "gunicorn started")
        yield deployed
    finally:
        for process in deployed.processes:
            stop_process(process)


def status_of(url: str, **headers: str) -> int:
    return fetch(url, **headers)[0]


def fetch(url: str, opener=None, data: bytes | None = None, **headers: str):
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with (opener or urllib.request.build_opener()).open(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, {}, b""


class PlainHttpCookies(http.cookiejar.DefaultCookiePolicy):
    """Production sets its cookies Secure (behind TLS); the test talks plain HTTP on
    loopback, so it sends them anyway."""

    def return_ok_secure(self, cookie, request):  # noqa: ANN001 - the base's signature
        return True


def signed_in(portal: Portal):
    jar = http.cookiejar.CookieJar(PlainHttpCookies())
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    fetch(f"{portal.url}/login/", opener)
    csrf = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
    body = urllib.parse.urlencode(
        {"username": "bob", "password": PASSWORD, "csrfmiddlewaretoken": csrf}
    ).encode()
    status, _, _ = fetch(f"{portal.url}/login/", opener, body, Referer=f"{portal.url}/login/")
    assert status == 200  # redirected to the dashboard, which answers
    return opener


class Load:
    """Pages and API requests in a loop from two threads; every status is counted."""

    def __init__(self, portal: Portal, opener) -> None:
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


def assert_503(portal: Portal, opener, service: str) -> None:
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


def recovered(portal: Portal, opener) -> bool:
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
    opener = signed_in(portal)
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


def test_a_worker_serves_the_metrics_of_its_pool_and_logs_the_enqueuing_request(
    portal, emulator, tmp_path
):
    metrics_port = free_port()
    log = tmp_path / "worker.log"
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "portal",
            "worker",
            "-Q",
            "watchers",
            "--pool",
            "prefork",
            "--concurrency",
            "2",
            "--loglevel",
            "INFO",
            "--hostname",
            f"outage-test-{metrics_port}@%h",
        ],
        cwd=ROOT,
        env={
            **portal.env,
            "METRICS_PORT": str(metrics_port),
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "worker-metrics"),
            "WATCH_RUN_SECONDS": "60",
        },
        stdout=open(log, "w"),  # noqa: SIM115 - closed with the process
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    portal.processes.append(worker)
    metrics = f"http://127.0.0.1:{metrics_port}/metrics"
    wait_for(lambda: status_of(metrics) == 200, 60, "the worker's metrics endpoint")
    manage(
        portal.env,
        "shell",
        "-c",
        "from portal.logs import log_context\n"
        "from mirror.tasks import watch_kind\n"
        "with log_context(request_id='enqueued-by-test'):\n"
        "    watch_kind.apply_async(('resourceslices',), queue='watchers')",
    )

    def batches() -> float:
        _, _, body = fetch(metrics)
        prefix = 'dra_portal_mirror_batch_duration_seconds_count{kind="resourceslices"}'
        lines = [line for line in body.decode().splitlines() if line.startswith(prefix)]
        return float(lines[0].split()[-1]) if lines else 0.0

    with Cluster(ClusterConfig(server=emulator.url)) as cluster:
        victim = cluster.list_page(Kind.RESOURCE_SLICES, limit=1)["items"][0]

        def changed() -> bool:
            """Edits a slice until the watcher (listing first) has committed a batch."""
            fresh = cluster.get(Kind.RESOURCE_SLICES, victim["metadata"]["name"])
            fresh["metadata"]["labels"] = {"edited": str(time.monotonic_ns())}
            cluster.replace(Kind.RESOURCE_SLICES, fresh)
            time.sleep(0.5)
            return batches() >= 1

        wait_for(changed, 60, "a watch batch measured in a pool process")

    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    task_lines = [line for line in lines if line.get("task_name") == "devices.tasks.watch_kind"]
    assert task_lines, log.read_text()[-3000:]
    assert {line["request_id"] for line in task_lines} == {"enqueued-by-test"}
