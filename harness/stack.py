"""The production stack on loopback, as real processes: what the fault tests and the load
benchmark (``benchmarks/load.py``) run against.

gunicorn, Celery workers and beat, and ``manage.py watch`` run as their own processes (each its
own process group, so a kill takes its pool with it) with ``DEBUG=false``; the cluster is the
API emulator in the calling process. The database is either a throwaway PostgreSQL server
(:class:`Postgres`, for tests that stop it) or a database of its own on the machine's server
(:func:`shared_database`); Redis likewise (:class:`Redis`, or a database number and key prefix
of the machine's). Nothing here is imported by the portal itself.
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
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "stack-test-password-1"  # noqa: S105 - the throwaway personas' password
# Environment variables of the calling process that must not leak into the stack's.
_PRIVATE_PREFIXES = ("DATABASE_URL", "REDIS_URL", "KUBE", "DJANGO_", "LOG_", "PYTEST", "METRICS_")


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


def stop_process(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Sends ``sig`` to the process's group and waits for it (SIGKILL after 20 s)."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


# -- throwaway services ------------------------------------------------------------------------


@dataclass
class Postgres:
    """A PostgreSQL server of its own (initdb in a temporary folder, a free port)."""

    folder: Path
    port: int
    bin: Path
    user: str | None  # run as this user (initdb refuses root)

    @classmethod
    def create(cls) -> Postgres:
        """Raises LookupError (with the reason) when no server can be made here."""
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb")) or [shutil.which("initdb")]
        if not found[-1]:
            raise LookupError("PostgreSQL's server binaries (initdb, pg_ctl) are not installed")
        user = None
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("postgres").pw_name
            except KeyError as error:
                raise LookupError("running as root with no postgres user for initdb") from error
        # Not under pytest's folder: that one is private to root, and the server runs as
        # postgres.
        folder = Path(tempfile.mkdtemp(prefix="dra-portal-postgres-"))
        if user:
            shutil.chown(folder, user)
        server = cls(folder, free_port(), Path(found[-1]).parent, user)
        server._run("initdb", "-D", str(folder / "data"), "-U", "postgres", "--auth=trust", "-N")
        server.start()
        import psycopg

        with psycopg.connect(
            f"host=127.0.0.1 port={server.port} user=postgres dbname=postgres", autocommit=True
        ) as connection:
            connection.execute("CREATE DATABASE portal")
        return server

    def _run(self, *args: str) -> None:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.user:
            command = ["runuser", "-u", self.user, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)  # noqa: S603
        assert result.returncode == 0, f"{args[0]}: {result.stdout}{result.stderr}"

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c max_connections=200"
        )
        log = str(self.folder / "log")
        self._run(
            "pg_ctl", "-D", str(self.folder / "data"), "-o", options, "-l", log, "-w", "start"
        )

    def stop(self) -> None:
        # -m fast: clients are disconnected at once, as in a restart or a failover.
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop")

    def destroy(self) -> None:
        with contextlib.suppress(AssertionError):  # already stopped
            self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/portal"


@dataclass
class Redis:
    """A redis-server of its own, append-only as in docker-compose.yml: what was queued
    survives a restart."""

    folder: Path
    port: int
    process: subprocess.Popen | None = None

    @classmethod
    def create(cls, folder: Path) -> Redis:
        if not shutil.which("redis-server"):
            raise LookupError("redis-server is not installed")
        folder.mkdir(parents=True, exist_ok=True)
        server = cls(folder, free_port())
        server.start()
        return server

    def start(self) -> None:
        self.process = subprocess.Popen(  # noqa: S603
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


@contextlib.contextmanager
def shared_database(server_url: str | None = None) -> Iterator[str]:
    """A database of its own on the machine's PostgreSQL (``server_url``, by default the
    server of ``DATABASE_URL``), dropped afterwards: its URL."""
    import psycopg

    base = urllib.parse.urlsplit(
        server_url or os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/x"
    )
    name = f"stack_{uuid.uuid4().hex[:12]}"
    admin = base._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield base._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def missing_redis_server() -> str | None:
    """Why :class:`Redis` (and so :func:`on_loopback`) cannot run here, or None."""
    return None if shutil.which("redis-server") else "redis-server is not installed"


@contextlib.contextmanager
def on_loopback(
    var: Path, objects: list[dict[str, Any]], **extra_env: str
) -> Iterator[tuple[Stack, Any]]:
    """A :class:`Stack` (migrated, nothing started) on a database of its own on the machine's
    PostgreSQL and a redis-server of its own, with the API emulator (in this process) holding
    ``objects``; every process it started is stopped afterwards. Needs a redis-server
    (:func:`missing_redis_server`)."""
    from apiemulator import Emulator

    broker = Redis.create(var / "redis")
    try:
        with (
            Emulator(port=0, bookmark_interval=0.5) as emulator,
            shared_database() as database_url,
        ):
            emulator.load(objects)
            stack = Stack(database_url, broker.url, emulator.url, var / "portal", extra_env)
            try:
                yield stack, emulator
            finally:
                stack.stop_all()
    finally:
        broker.stop()


# -- the portal's processes ----------------------------------------------------------------------


@dataclass
class Stack:
    """The portal's processes on one database, one Redis and one cluster (``kube``: the API
    server's URL). :meth:`prepare` migrates and seeds; then start what the test needs."""

    database_url: str
    redis_url: str
    kube: str
    var: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    token: str = ""
    url: str = ""

    def __post_init__(self) -> None:
        self.var.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(_PRIVATE_PREFIXES)}
        env.update(
            DEBUG="false",
            SECRET_KEY=secrets.token_urlsafe(50),
            ALLOWED_HOSTS="127.0.0.1,localhost",
            DATABASE_URL=self.database_url,
            REDIS_URL=self.redis_url,
            SECURE_SSL_REDIRECT="false",
            STATIC_ROOT=str(self.var / "static"),
            PORTAL_VAR_DIR=str(self.var),
            KUBE_API_SERVER=self.kube,
            DATABASE_CONNECT_TIMEOUT="2",
            REDIS_TIMEOUT_SECONDS="2",
            LOG_FORMAT="json",
            WATCH_REQUEST_SECONDS="5",
            # Keys of its own in a Redis it may share (watcher locks, the cache's prefix).
            WATCHER_LOCK_PREFIX=f"stack-{uuid.uuid4().hex[:8]}:watcher:",
            # Every scrape is allowed from loopback (the default list has it).
        )
        env.update(self.extra_env)
        self.env = env

    # -- set up -----------------------------------------------------------------------------

    def manage(self, *args: str, timeout: float = 300) -> str:
        result = subprocess.run(  # noqa: S603
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout

    def shell(self, code: str) -> str:
        """Runs ``code`` in ``manage.py shell`` against the stack's database; its last line."""
        lines = self.manage("shell", "-c", code).strip().splitlines()
        return lines[-1] if lines else ""

    def prepare(self, *, static: bool = True) -> None:
        """Migrations, static files, the demo personas and class policies, and an API token
        for bob (``self.token``)."""
        self.manage("migrate", "--no-input")
        if static:
            self.manage("collectstatic", "--no-input", "--verbosity", "0")
        self.manage("seed_demo")
        self.token = self.shell(
            "from django.contrib.auth.models import User\n"
            "from demo.data import seed_class_policies\n"
            "from portal.services.api_tokens import issue_api_token\n"
            "seed_class_policies()\n"
            "bob = User.objects.get(username='bob')\n"
            f"bob.set_password('{PASSWORD}'); bob.save()\n"
            "print(issue_api_token(user=bob, name='stack', lifetime=None).secret)"
        )

    # -- processes --------------------------------------------------------------------------

    def start(self, name: str, argv: list[str], **env: str) -> subprocess.Popen:
        """Starts ``argv`` (a module run with this Python) as ``name``; its output goes to
        ``var/<name>.log``."""
        log = open(self.var / f"{name}.log", "a")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(  # noqa: S603
            [sys.executable, *argv],
            cwd=ROOT,  # gunicorn.conf.py is read from here
            env={**self.env, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.processes[name] = process
        return process

    def log(self, name: str) -> str:
        path = self.var / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def json_log(self, name: str) -> list[dict[str, Any]]:
        lines = []
        for line in self.log(name).splitlines():
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    lines.append(json.loads(line))
        return lines

    def web(self, *, workers: int = 2, name: str = "web", **env: str) -> subprocess.Popen:
        port = free_port()
        process = self.start(
            name,
            [
                "-m",
                "gunicorn",
                "portal.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(workers),
                "--timeout",
                "60",
            ],
            PROMETHEUS_MULTIPROC_DIR=str(self.var / f"{name}-metrics"),
            **env,
        )
        self.url = f"http://127.0.0.1:{port}"
        wait_for(lambda: status_of(f"{self.url}/healthz") == 200, 60, "gunicorn started")
        return process

    def worker(
        self,
        name: str,
        queues: str,
        *,
        concurrency: int = 1,
        pool: str = "prefork",
        metrics_port: int = 0,
        **env: str,
    ) -> subprocess.Popen:
        """A Celery worker consuming ``queues`` (comma-separated), started once it answers a
        ping."""
        extra = dict(env)
        if metrics_port:
            extra.update(
                METRICS_PORT=str(metrics_port),
                PROMETHEUS_MULTIPROC_DIR=str(self.var / f"{name}-metrics"),
            )
        hostname = f"{name}-{uuid.uuid4().hex[:6]}@stack"
        process = self.start(
            name,
            [
                "-m",
                "celery",
                "-A",
                "portal",
                "worker",
                "-Q",
                queues,
                "--pool",
                pool,
                "--concurrency",
                str(concurrency),
                "--loglevel",
                "INFO",
                "--hostname",
                hostname,
                "--without-gossip",
                "--without-mingle",
            ],
            **extra,
        )
        wait_for(lambda: "ready." in self.log(name) or process.poll() is not None, 60, name)
        assert process.poll() is None, self.log(name)[-3000:]
        return process

    def beat(self, name: str = "beat") -> subprocess.Popen:
        return self.start(
            name,
            [
                "-m",
                "celery",
                "-A",
                "portal",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                str(self.var / f"{name}-schedule"),
            ],
        )

    def watchers(self, name: str, **env: str) -> subprocess.Popen:
        return self.start(
            name,
            ["manage.py", "watch", "--alive-file", str(self.var / f"{name}.alive")],
            **env,
        )

    def stop(self, name: str, sig: int = signal.SIGTERM) -> None:
        process = self.processes.pop(name, None)
        if process is not None:
            stop_process(process, sig)

    def stop_all(self) -> None:
        for name in list(self.processes):
            self.stop(name)

    # -- talking to it ----------------------------------------------------------------------

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` on the stack's database (for checks; the portal writes it)."""
        import psycopg

        with psycopg.connect(self.database_url, connect_timeout=5) as connection:
            return connection.execute(sql, params).fetchall()  # type: ignore[arg-type]

    def wait_until_mirrored(
        self, device_class: str = "gpu.nvidia.com", seconds: float = 60
    ) -> None:
        """Waits until the watchers have mirrored ``device_class`` and its devices' states."""

        def mirrored() -> bool:
            return bool(
                self.query("SELECT 1 FROM devices_deviceclass WHERE name = %s", device_class)
            ) and bool(self.query("SELECT 1 FROM devices_device LIMIT 1"))

        wait_for(mirrored, seconds, f"the mirror holds {device_class}")

    def api(self, method: str, path: str, body: Any = None, **headers: str) -> tuple[int, Any]:
        """One API call as bob (his token): the status and the decoded JSON (None without)."""
        data = None if body is None else json.dumps(body).encode()
        all_headers = {"Authorization": f"Bearer {self.token}", **headers}
        if data is not None:
            all_headers["Content-Type"] = "application/json"
        request = urllib.request.Request(
            f"{self.url}/api/v1/{path.lstrip('/')}", data=data, headers=all_headers, method=method
        )
        status, _, raw = _send(request)
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, None


def _send(request: urllib.request.Request, opener=None) -> tuple[int, dict[str, str], bytes]:
    try:
        with (opener or urllib.request.build_opener()).open(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, {}, b""


def fetch(url: str, opener=None, data: bytes | None = None, **headers: str):
    """GET (POST with ``data``) ``url``: status, headers, body; status 0 when nothing
    answered."""
    return _send(urllib.request.Request(url, data=data, headers=headers), opener)


def status_of(url: str, **headers: str) -> int:
    return fetch(url, **headers)[0]


class PlainHttpCookies(http.cookiejar.DefaultCookiePolicy):
    """Production sets its cookies Secure (behind TLS); the stack talks plain HTTP on
    loopback, so they are sent anyway."""

    def return_ok_secure(self, cookie, request):  # noqa: ANN001 - the base's signature
        return True


def signed_in(url: str, username: str = "bob", password: str = PASSWORD):
    """An opener with a signed-in session of ``username``."""
    jar = http.cookiejar.CookieJar(PlainHttpCookies())
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    fetch(f"{url}/login/", opener)
    csrf = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
    body = urllib.parse.urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": csrf}
    ).encode()
    status, _, _ = fetch(f"{url}/login/", opener, body, Referer=f"{url}/login/")
    assert status == 200  # redirected to the dashboard, which answers
    return opener
