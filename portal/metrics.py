"""The portal's own Prometheus metrics (docs/operations.md), with the client library.

Two kinds of metric:

* **Measured where it happens** (histograms defined here, observed by the code that does the
  work): request latency by view (``portal.middleware``), the mirror's batch time
  (``mirror.reflector``), submit → applied and apply outcomes (``claims.lifecycle.apply``),
  telemetry cycle time (``devices.telemetry.ingest``). They live in the process that did the
  work: the web's gunicorn workers, or a Celery worker (watchers, allocations, telemetry).
* **Read at scrape time** (collectors registered with :func:`register_collector` by each app:
  the mirror's lag and events, claim requests by state, readiness, and the Celery queue depth
  here), from the database and Redis, cached ``METRICS_CACHE_SECONDS``. Only the web's
  ``/metrics`` serves them, so they are counted once per scrape target whatever runs where.

Several processes: with ``PROMETHEUS_MULTIPROC_DIR`` set (before the process starts; one empty
directory per pod or container, never shared between web and workers) every process writes its
samples there and a scrape adds them up (``MultiProcessCollector``). gunicorn clears the
directory at start and marks exited workers dead (``gunicorn.conf.py``); a Celery worker clears
it at start and serves it on ``METRICS_PORT`` (:func:`start_metrics_server`). Without it (the
demo: one process) the process's own registry is served.

Scrapes are allowed from ``METRICS_ALLOWED_NETWORKS`` or with ``Authorization: Bearer
<METRICS_TOKEN>`` (:func:`is_scrape_allowed`, the one rule for both endpoints).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from django.conf import settings
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import REGISTRY, Collector

__all__ = [
    "APPLY_OUTCOMES",
    "APPLY_SECONDS",
    "CONTENT_TYPE",
    "CachedCollector",
    "MIRROR_BATCH_SECONDS",
    "PREFIX",
    "REQUEST_SECONDS",
    "TELEMETRY_CYCLE_SECONDS",
    "exposition",
    "is_scrape_allowed",
    "multiprocess_dir",
    "prepare_multiprocess_dir",
    "register_collector",
    "start_metrics_server",
]

logger = logging.getLogger(__name__)

# No "_created" series: in the classic text format each would be one more gauge per child.
disable_created_metrics()

PREFIX = "dra_portal"
# The classic text format, which every Prometheus reads (the client library's newer default,
# version 1.0.0, is the same text for these names, but older servers refuse that header).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

# -- measured where it happens ------------------------------------------------------------------

REQUEST_SECONDS = Histogram(
    f"{PREFIX}_http_request_duration_seconds",
    "Time to answer a request (until the response is returned; a streamed body is not "
    "counted), by view name, method and status class (2xx, 3xx, 4xx, 5xx).",
    ["view", "method", "status"],
    buckets=_SECONDS,
)
MIRROR_BATCH_SECONDS = Histogram(
    f"{PREFIX}_mirror_batch_duration_seconds",
    "Time to commit one batch of watch events of a kind (rows, device states, status).",
    ["kind"],
    buckets=(0.001, 0.0025, *_SECONDS),
)
APPLY_SECONDS = Histogram(
    f"{PREFIX}_claim_apply_duration_seconds",
    "Time from a claim request's submission (or approval) until its claim is applied in the "
    "cluster, by allocation mode.",
    ["mode"],
    buckets=(0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0),
)
APPLY_OUTCOMES = Counter(
    f"{PREFIX}_claim_apply",
    "Attempts to apply a claim request, by outcome: applied, failed (no devices, name taken, "
    "refused by the API server) or unreachable (the API server did not answer; retried).",
    ["outcome"],
)
TELEMETRY_CYCLE_SECONDS = Histogram(
    f"{PREFIX}_telemetry_cycle_duration_seconds",
    "Time of one telemetry ingest cycle of a source (collect, join, store).",
    ["source"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)


# -- read at scrape time ------------------------------------------------------------------------


class CachedCollector(Collector):
    """A collector that reads the database or Redis: its families are kept for
    ``METRICS_CACHE_SECONDS`` so that frequent scrapes (and several Prometheus replicas) cost
    one read. A failing read is logged and leaves ``dra_portal_scrape_collector_up`` at 0 for
    it instead of failing the scrape."""

    name = "collector"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._families: list[Metric] = []
        self._read_at = -1e9
        self.up = False

    def read(self) -> Iterable[Metric]:
        raise NotImplementedError

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            if time.monotonic() - self._read_at >= settings.METRICS_CACHE_SECONDS:
                try:
                    self._families = list(self.read())
                    self.up = True
                except Exception as error:  # a scrape outlives a missing database or Redis
                    logger.warning("metrics: %s could not be read: %s", self.name, error)
                    self._families, self.up = [], False
                self._read_at = time.monotonic()
            families = list(self._families)
        yield from families

    def describe(self) -> Iterator[Metric]:
        return iter(())


class QueueDepthCollector(CachedCollector):
    """Messages waiting in each Celery queue (Redis ``LLEN`` of the queue's lists, one per
    priority step kombu uses). Without a Redis broker (tasks run in-process) no samples."""

    name = "celery_queues"
    # kombu's Redis transport keeps priority p > 0 of queue q in the list q + SEPARATOR + p.
    _SEPARATOR = "\x06\x16"

    def __init__(self) -> None:
        super().__init__()
        self._client: Any = None

    def read(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(
            f"{PREFIX}_celery_queue_length",
            "Messages waiting in a Celery queue (read from the Redis broker at scrape time).",
            labels=["queue"],
        )
        url = str(settings.CELERY_BROKER_URL)
        if url.startswith(("redis://", "rediss://")):
            # The project's app is the current one (``portal/__init__`` creates it); reading
            # it through Celery keeps ``portal.celery``, which serves these metrics from a
            # worker, the only one of the two that imports the other.
            from celery import current_app as app

            client = self._redis(url)
            steps = (app.conf.broker_transport_options or {}).get("priority_steps", [0, 3, 6, 9])
            names = [queue.name for queue in app.conf.task_queues or ()]
            with client.pipeline(transaction=False) as pipe:
                for name in names:
                    for step in steps:
                        pipe.llen(f"{name}{self._SEPARATOR}{step}" if step else name)
                lengths = pipe.execute()
            per_queue = len(steps)
            for index, name in enumerate(names):
                family.add_metric([name], sum(lengths[index * per_queue : (index + 1) * per_queue]))
        yield family

    def _redis(self, url: str) -> Any:
        if self._client is None:
            import redis

            timeout = settings.READYZ_TIMEOUT_SECONDS
            self._client = redis.Redis.from_url(
                url, socket_connect_timeout=timeout, socket_timeout=timeout
            )
        return self._client


class _CollectorHealth(Collector):
    """``dra_portal_scrape_collector_up``: whether each scrape-time collector's last read
    worked (1) or failed (0)."""

    def __init__(self, collectors: list[CachedCollector]) -> None:
        self._collectors = collectors

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            f"{PREFIX}_scrape_collector_up",
            "Whether a scrape-time collector could read its source (database, Redis) last time.",
            labels=["collector"],
        )
        for collector in self._collectors:
            family.add_metric([collector.name], 1.0 if collector.up else 0.0)
        yield family


_SCRAPE_COLLECTORS: list[CachedCollector] = [QueueDepthCollector()]


def register_collector(collector: CachedCollector) -> None:
    """Serve ``collector`` on the web's ``/metrics`` (apps call this from ``ready()``)."""
    if all(type(existing) is not type(collector) for existing in _SCRAPE_COLLECTORS):
        _SCRAPE_COLLECTORS.append(collector)


# -- several processes ----------------------------------------------------------------------------


def multiprocess_dir() -> Path | None:
    """``PROMETHEUS_MULTIPROC_DIR`` when set (the client library reads it at import)."""
    value = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    return Path(value) if value else None


def prepare_multiprocess_dir() -> None:
    """At a server's start, before it forks: the directory exists and holds no samples of
    processes that ran before (a restarted container keeps its emptyDir)."""
    folder = multiprocess_dir()
    if folder is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.db"):
        stale.unlink(missing_ok=True)


def _live_registry() -> Collector:
    """The samples measured where they happen: every process's (multi-process mode) or this
    process's own."""
    if multiprocess_dir() is None:
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return registry


def exposition(*, scrape_time: bool = True) -> bytes:
    """The text exposition: live samples, then (``scrape_time``) the collectors read now."""
    output = generate_latest(_live_registry())
    if scrape_time:
        registry = CollectorRegistry(auto_describe=False)
        collectors = list(_SCRAPE_COLLECTORS)
        for collector in collectors:
            registry.register(collector)
        registry.register(_CollectorHealth(collectors))
        output += generate_latest(registry)
    return output


# -- who may scrape -------------------------------------------------------------------------------


def is_scrape_allowed(remote_addr: str | None, authorization: str | None) -> bool:
    """A scrape from an address in ``METRICS_ALLOWED_NETWORKS``, or one that presents
    ``Authorization: Bearer <METRICS_TOKEN>`` (when a token is configured)."""
    token = settings.METRICS_TOKEN
    if token and authorization:
        scheme, _, presented = authorization.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            presented.strip().encode(), token.encode()
        ):
            return True
    try:
        address = ipaddress.ip_address((remote_addr or "").split("%")[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return any(address in network for network in _allowed_networks())


def _allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [
        ipaddress.ip_network(value, strict=False) for value in settings.METRICS_ALLOWED_NETWORKS
    ]


# -- the Celery workers' endpoint -----------------------------------------------------------------


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        pass


def _metrics_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    if not is_scrape_allowed(environ.get("REMOTE_ADDR"), environ.get("HTTP_AUTHORIZATION")):
        start_response("403 Forbidden", [("Content-Type", "text/plain; charset=utf-8")])
        return [FORBIDDEN.encode()]
    body = exposition(scrape_time=False)
    start_response("200 OK", [("Content-Type", CONTENT_TYPE)])
    return [body]


FORBIDDEN = (
    "Metrics are served to the networks in METRICS_ALLOWED_NETWORKS, or with "
    "Authorization: Bearer <METRICS_TOKEN>.\n"
)


def start_metrics_server(port: int, addr: str = "") -> WSGIServer:
    """Serves this process's metrics (every process's, in multi-process mode) on ``port`` in
    a daemon thread: the Celery workers' ``/metrics`` (any path answers), under the same
    access rule as the web's."""
    server = make_server(addr, port, _metrics_app, _ThreadingServer, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True, name="metrics-server").start()
    return server
