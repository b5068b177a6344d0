"""Cluster-mirror benchmark: 5,000 DGX H100 nodes (40,000 GPUs) and 36,000 allocated claims.

Run: ``.venv/bin/python benchmarks/mirror.py`` (``--quick`` for a 500-node smoke run). Needs
PostgreSQL: ``DATABASE_URL`` defaults to ``postgres://postgres@127.0.0.1:5432/dra_portal_bench``;
the database is created when missing, migrated, and its mirror tables are emptied first.

The API emulator serves the scenario on loopback from this process. The watcher (cold mirror,
resync, then list+watch of slices and claims) runs in a child process, as in production, so its
peak RSS is its own and the emulator does not share its GIL. The watch lag is exact: a
``Reflector`` subclass records, right after each batch commits, ``now - sent`` for every event of
the batch, where ``sent`` is the ``bench/sent-at`` annotation the writer put in the object the
moment it wrote it to the emulator's store. Page timings run last, in this process, through
Django's test ``Client`` (time around ``client.get``: the whole server side, no network).
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import gc
import json
import logging
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dra_portal_bench")

FIXTURES = ROOT / "devices" / "fixtures"
SENT_AT = "bench/sent-at"
NAMESPACES = [f"team-{letter}" for letter in "abcdef"]
GPUS_PER_NODE = 8
MIRROR_TABLES_PREFIXES = ("devices_", "claims_")

# -- output ---------------------------------------------------------------------------------------

ROWS: list[tuple[str, str, str, str]] = []


def report(label: str, value: str, target: str = "–", met: bool | None = None) -> None:
    verdict = "" if met is None else ("met" if met else "MISSED")
    ROWS.append((label, value, target, verdict))
    print(f"  {label:<68} {value:>16}   target {target:<12} {verdict}", flush=True)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[index]


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = ""
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}, {load}"
    )


# -- the database ---------------------------------------------------------------------------------


def ensure_database() -> None:
    """Creates the benchmark database when missing; exits with a clear message when PostgreSQL
    is not reachable."""
    import psycopg

    url = os.environ["DATABASE_URL"]
    if not url.startswith(("postgres://", "postgresql://")):
        sys.exit(f"DATABASE_URL must point at PostgreSQL for this benchmark (got {url!r}).")
    try:
        psycopg.connect(url, connect_timeout=5).close()
        return
    except psycopg.OperationalError as error:
        if "does not exist" not in str(error):
            sys.exit(
                f"PostgreSQL is not reachable at {url}: {str(error).strip()}\n"
                "Start it (e.g. `docker compose up -d db`) or set DATABASE_URL."
            )
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, connect_timeout=5, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    print(f"created database {name}")


def setup_django(migrate: bool) -> None:
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)


def mirror_tables() -> list[str]:
    from django.apps import apps

    return [
        model._meta.db_table
        for model in apps.get_models()
        if model._meta.db_table.startswith(MIRROR_TABLES_PREFIXES)
    ]


def database_mib() -> float:
    """The benchmark database's size on disk (tables, indexes, TOAST), in MiB."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        size = cursor.fetchone()[0]
    connection.close()
    return float(size) / 2**20


def flush_mirror_tables() -> None:
    from django.db import connection

    from claims.models import AllocatedDevice, AllocationRecord, ClaimConsumer, UsageCounter
    from devices.models import Device, SharedCounterSet
    from mirror.models import MirrorStatus
    from mirror.store import MODELS

    # The allocation history too: the scenario's claims keep their uids from run to run, so
    # records left open by an earlier run would make a cold mirror open fewer of its own.
    tables = [
        m._meta.db_table
        for m in [
            *MODELS.values(),
            Device,
            SharedCounterSet,
            AllocatedDevice,
            ClaimConsumer,
            AllocationRecord,
            UsageCounter,
            MirrorStatus,
        ]
    ]
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")


def tuple_counts() -> dict[str, tuple[int, int, int]]:
    """n_tup_ins / n_tup_upd / n_tup_del per table, as PostgreSQL's statistics have them.

    Backends report their counters when they go idle or exit, so the caller closes its
    connection first; this polls until two reads agree.
    """
    from django.db import connection

    previous: dict[str, tuple[int, int, int]] | None = None
    for _ in range(20):
        time.sleep(0.5)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables"
            )
            counts = {name: (ins, upd, dele) for name, ins, upd, dele in cursor.fetchall()}
        connection.close()
        if counts == previous:
            return counts
        previous = counts
    return previous or {}


# -- the scenario ---------------------------------------------------------------------------------


def _items(name: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURES / name).read_text())["items"]


def build_scenario(nodes: int, claims: int) -> dict[str, list[dict[str, Any]]]:
    """Nodes, one gpu.nvidia.com slice per node (8 H100s), claims allocated to distinct GPUs."""
    template = next(
        item
        for item in _items("nvidia-dgx-h100.json")
        if item["kind"] == "ResourceSlice" and item["spec"]["driver"] == "gpu.nvidia.com"
    )
    node_template = next(
        item for item in _items("nodes.json") if item["metadata"]["name"] == "dgx-h100-01"
    )
    claim_template = next(
        item
        for item in _items("claims.json")
        if item["kind"] == "ResourceClaim" and (item.get("status") or {}).get("allocation")
    )
    device_classes = _items("deviceclasses.json")
    assert len(template["spec"]["devices"]) == GPUS_PER_NODE
    node_objects, slice_objects, claim_objects = [], [], []
    for index in range(nodes):
        name = f"node-{index:05d}"
        node_uid = str(uuid.UUID(int=index + 1))
        node = copy.deepcopy(node_template)
        node["metadata"].update(name=name, uid=node_uid)
        node["metadata"].pop("resourceVersion", None)
        node["metadata"]["labels"].update(
            {"kubernetes.io/hostname": name, "nvidia.com/gpu.clique": f"cluster-a.{index // 18}"}
        )
        node_objects.append(node)
        gpus = copy.deepcopy(template)
        gpus["metadata"] = {
            "name": f"{name}-gpu.nvidia.com-{index:05x}",
            "generateName": f"{name}-gpu.nvidia.com-",
            "uid": str(uuid.UUID(int=(1 << 64) + index)),
            "creationTimestamp": template["metadata"]["creationTimestamp"],
            "generation": 1,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "controller": True,
                    "kind": "Node",
                    "name": name,
                    "uid": node_uid,
                }
            ],
        }
        gpus["spec"]["nodeName"] = name
        gpus["spec"]["pool"] = {"name": name, "generation": 1, "resourceSliceCount": 1}
        for number, device in enumerate(gpus["spec"]["devices"]):
            attributes = device["attributes"]
            attributes["uuid"] = {"string": f"GPU-{index:08x}-0000-4000-8000-{number:012x}"}
        slice_objects.append(gpus)
    for index in range(claims):
        node_index, gpu = divmod(index, GPUS_PER_NODE)
        node_name = f"node-{node_index:05d}"
        pod = f"job-{index:05d}"
        pod_uid = str(uuid.UUID(int=(2 << 64) + index))
        claim = copy.deepcopy(claim_template)
        claim["metadata"] = {
            "name": f"{pod}-gpu-{index:05x}",
            "generateName": f"{pod}-gpu-",
            "namespace": NAMESPACES[index % len(NAMESPACES)],
            "uid": str(uuid.UUID(int=(3 << 64) + index)),
            "creationTimestamp": claim_template["metadata"]["creationTimestamp"],
            "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
            "finalizers": ["resource.kubernetes.io/delete-protection"],
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "blockOwnerDeletion": True,
                    "controller": True,
                    "kind": "Pod",
                    "name": pod,
                    "uid": pod_uid,
                }
            ],
        }
        allocation = claim["status"]["allocation"]
        allocation["devices"]["results"] = [
            {
                "device": f"gpu-{gpu}",
                "driver": "gpu.nvidia.com",
                "pool": node_name,
                "request": "gpu",
            }
        ]
        allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] = [node_name]
        claim["status"]["reservedFor"] = [{"name": pod, "resource": "pods", "uid": pod_uid}]
        claim_objects.append(claim)
    return {
        "deviceclasses": device_classes,
        "nodes": node_objects,
        "resourceslices": slice_objects,
        "resourceclaims": claim_objects,
    }


# -- the watcher (child process) ------------------------------------------------------------------


def emit(tag: str, payload: Any) -> None:
    print(f"BENCH {tag} {json.dumps(payload)}", flush=True)


def peak_rss_mib() -> float:
    """The process's peak resident memory. On Linux ``VmHWM``, the high-water mark of the
    memory it runs in now: ``ru_maxrss`` also keeps the peak of the image it was started from,
    which for a child is its parent's at the fork (here the emulator holding the scenario:
    until 2026-12-04 the watcher's figure was the emulator's, 501 MiB at 5,000 nodes)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, IndexError, ValueError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mib() -> float:
    """Resident memory now (Linux; elsewhere the peak)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return peak_rss_mib()
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class RssSampler(threading.Thread):
    """Samples the process's resident memory every 20 ms and keeps, per label (what the
    watcher is doing), the highest seen: the peak says which step needs the memory."""

    def __init__(self) -> None:
        super().__init__(name="rss-sampler", daemon=True)
        self.label = "start"
        self.peaks: dict[str, float] = {}

    def run(self) -> None:
        while True:
            label, rss = self.label, current_rss_mib()
            self.peaks[label] = max(self.peaks.get(label, 0.0), rss)
            time.sleep(0.02)


def watcher_main(url: str, watch_seconds: float, profile: str | None) -> None:
    """Cold mirror, resync, then list+watch until the parent says STOP (stdin)."""
    # As in production, the watcher only enqueues the tasks that derive data from its rows
    # (device-class memberships); a Celery worker runs them. Timed separately below.
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "false"
    setup_django(migrate=False)
    from django.conf import settings

    settings.DEBUG = False  # as in production: no log of every SQL statement in memory
    logging.getLogger("mirror").setLevel(logging.WARNING)
    from django.db import connection

    from kube.client import Cluster
    from kube.config import ClusterConfig
    from kube.kinds import Kind
    from mirror.mapping import MIRRORED_KINDS
    from mirror.reflector import Reflector

    class TimedReflector(Reflector):
        """Records, right after each batch commits, the commit time of each event's
        resourceVersion (the writer knows when it sent each one)."""

        committed: list[tuple[int, float]]

        def _commit(self, batch: list[dict[str, Any]], first_received: float | None) -> None:
            super()._commit(batch, first_received)
            now = time.time()
            for event in batch:
                metadata = (event.get("object") or {}).get("metadata") or {}
                version = metadata.get("resourceVersion")
                if version:
                    self.committed.append((int(version), now))

    cluster = Cluster(ClusterConfig(server=url, read_timeout=120))
    tables = set(mirror_tables()) - {"devices_mirrorstatus"}

    results: dict[str, Any] = {"cold": {}, "resync": {}, "rss_mib_before": current_rss_mib()}
    sampler = RssSampler()
    sampler.start()
    for phase in ("cold", "resync"):
        connection.close()
        before = tuple_counts()
        profiler = cProfile.Profile() if profile else None
        if profiler:
            profiler.enable()
        total_started = time.perf_counter()
        for kind in MIRRORED_KINDS:
            started = time.perf_counter()
            sampler.label = f"{phase} {kind.value}"
            applied = Reflector(kind, cluster, watcher="bench").relist()
            results[phase][kind.value] = {
                "seconds": time.perf_counter() - started,
                "rss_mib": current_rss_mib(),
                "written": applied.written,
                "deleted": applied.deleted,
                "malformed": applied.malformed,
            }
        results[phase]["total_seconds"] = time.perf_counter() - total_started
        if profiler:
            profiler.disable()
            profiler.dump_stats(f"{profile}.{phase}")
        connection.close()
        after = tuple_counts()
        delta = {
            name: [a - b for a, b in zip(after[name], before.get(name, (0, 0, 0)), strict=True)]
            for name in after
        }
        results[phase]["tuples"] = {n: d for n, d in delta.items() if n in tables and any(d)}
        results[phase]["status_tuples"] = delta.get("devices_mirrorstatus", [0, 0, 0])
    results["peak_rss_mib_after_lists"] = peak_rss_mib()
    # The device-class memberships follow a relist in a Celery task; pages are right only once
    # it has run, so the cold figure users wait for includes it.
    from mirror.classes import refresh_class_matches

    started = time.perf_counter()
    sampler.label = "memberships"
    refresh_class_matches(None)
    results["class_refresh_seconds"] = time.perf_counter() - started
    results["rss_mib_after_memberships"] = current_rss_mib()
    sampler.label = "floor"
    results["rss_peaks"] = dict(sampler.peaks)
    connection.close()
    import psycopg

    from benchmarks.floor import measure_floor

    results["floor"] = measure_floor(
        cluster, MIRRORED_KINDS, lambda: psycopg.connect(os.environ["DATABASE_URL"])
    )
    emit("lists", results)

    # -- list+watch of slices and claims while the parent writes ---------------------------
    stop = threading.Event()

    def watchers(name: str) -> tuple[list[TimedReflector], list[threading.Thread]]:
        """A reflector for slices and one for claims, each in a thread of its own (started),
        resuming from the resourceVersion the last ones committed."""
        started = [
            TimedReflector(kind, cluster, watcher="bench", watch_seconds=30)
            for kind in (Kind.RESOURCE_SLICES, Kind.RESOURCE_CLAIMS)
        ]
        running = []
        for reflector in started:
            reflector.committed = []
            running.append(
                threading.Thread(
                    target=run, args=(reflector,), name=f"{name}-{reflector.kind}", daemon=True
                )
            )
            running[-1].start()
        return started, running

    def run(reflector: Reflector) -> None:
        profiler = cProfile.Profile() if profile else None
        try:
            if profiler:
                profiler.runcall(reflector.run, seconds=watch_seconds * 2 + 600, stop=stop)
            else:
                reflector.run(seconds=watch_seconds * 2 + 600, stop=stop)
        finally:
            if profiler:
                profiler.dump_stats(f"{profile}.watch-{reflector.kind.value}")
            connection.close()

    reflectors, threads = watchers("bench")
    time.sleep(1.0)  # both watches open
    emit("ready", {})
    line = sys.stdin.readline().split()
    expected = int(line[1]) if len(line) > 1 and line[0] == "STOP" else 0
    deadline = time.monotonic() + 60
    while sum(len(r.committed) for r in reflectors) < expected and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    for thread in threads:
        thread.join(40)
    emit(
        "watch",
        {
            "committed": [pair for r in reflectors for pair in r.committed],
            "per_kind": {r.kind.value: len(r.committed) for r in reflectors},
            "peak_rss_mib": peak_rss_mib(),
        },
    )

    # -- a backlog: events written while no watcher ran, drained from the saved version -----
    line = sys.stdin.readline().split()
    if len(line) == 2 and line[0] == "DRAIN":
        expected = int(line[1])
        stop = threading.Event()
        started = time.perf_counter()
        reflectors, threads = watchers("drain")
        deadline = time.monotonic() + 600
        while sum(len(r.committed) for r in reflectors) < expected and time.monotonic() < deadline:
            time.sleep(0.01)
        seconds = time.perf_counter() - started
        stop.set()
        for thread in threads:
            thread.join(40)
        emit(
            "drain",
            {
                "seconds": seconds,
                "committed": sum(len(r.committed) for r in reflectors),
                "peak_rss_mib": peak_rss_mib(),
            },
        )
    cluster.close()


# -- the writer (parent) --------------------------------------------------------------------------


# One cycle of 20 watch events: 2 slice metadata updates (10 %), 8 claim metadata updates
# (40 %), 3 allocations cleared and 3 written (30 %: device states change), 2 claims created and
# 2 deleted (20 %). What a busy cluster's scheduler and controllers do, not annotations alone.
CYCLE = [
    "slice-meta",
    "claim-meta",
    "dealloc",
    "claim-meta",
    "create",
    "alloc",
    "claim-meta",
    "delete",
    "claim-meta",
    "dealloc",
    "slice-meta",
    "claim-meta",
    "alloc",
    "claim-meta",
    "create",
    "dealloc",
    "claim-meta",
    "delete",
    "claim-meta",
    "alloc",
]


class Churn:
    """Writes the watch load through the emulator's store (every write is one watch event) and
    remembers when each resourceVersion was sent."""

    def __init__(self, emulator: Any, claims: list[tuple[str, str]], slices: list[str]) -> None:
        from apiemulator.resources import by_kind

        self.store = emulator.store
        self.claim_resource = by_kind["ResourceClaim"]
        self.slice_resource = by_kind["ResourceSlice"]
        self.slices = slices
        self.claims = claims
        first = self.store.get(self.claim_resource, *claims[0])
        self.allocation_template = copy.deepcopy(first.obj["status"]["allocation"])
        self.claim_template = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "spec": copy.deepcopy(first.obj["spec"]),
        }
        # Allocated claims in scenario order (each holds one GPU); the free GPUs are those of
        # the nodes no claim reaches.
        self.allocated: list[tuple[str, str]] = list(claims)
        self.held: dict[tuple[str, str], tuple[str, str]] = {}
        for index, key in enumerate(claims):
            node, gpu = divmod(index, GPUS_PER_NODE)
            self.held[key] = (f"node-{node:05d}", f"gpu-{gpu}")
        nodes = len(slices)
        used = {device for device in self.held.values()}
        self.free = [
            (f"node-{node:05d}", f"gpu-{gpu}")
            for node in range(nodes)
            for gpu in range(GPUS_PER_NODE)
            if (f"node-{node:05d}", f"gpu-{gpu}") not in used
        ]
        self.deallocated: list[tuple[str, str]] = []
        self.created: list[tuple[str, str]] = []
        self.sent_at: dict[int, float] = {}
        self.kinds: dict[str, int] = dict.fromkeys(set(CYCLE), 0)
        self.counter = 0

    def _meta_patch(self) -> dict[str, Any]:
        return {"metadata": {"annotations": {SENT_AT: f"{time.time():.6f}"}}}

    def _step(self, operation: str) -> int:
        store, claims = self.store, self.claim_resource
        self.counter += 1
        n = self.counter
        if operation == "dealloc" and self.allocated:
            key = self.allocated.pop(0)
            entry, _ = store.patch(
                claims,
                *key,
                "merge",
                {"status": {"allocation": None, "reservedFor": None}},
                subresource="status",
            )
            self.free.append(self.held.pop(key))
            self.deallocated.append(key)
            return entry.rv
        if operation == "alloc" and self.deallocated and self.free:
            key = self.deallocated.pop(0)
            node, device = self.free.pop(0)
            allocation = copy.deepcopy(self.allocation_template)
            allocation["devices"]["results"] = [
                {"device": device, "driver": "gpu.nvidia.com", "pool": node, "request": "gpu"}
            ]
            allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] = [node]
            entry, _ = store.patch(
                claims, *key, "merge", {"status": {"allocation": allocation}}, subresource="status"
            )
            self.held[key] = (node, device)
            self.allocated.append(key)
            return entry.rv
        if operation == "create":
            namespace = NAMESPACES[n % len(NAMESPACES)]
            body = copy.deepcopy(self.claim_template)
            body["metadata"] = {"name": f"churn-{n:07d}", "namespace": namespace}
            entry = store.create(claims, namespace, body)
            self.created.append((namespace, body["metadata"]["name"]))
            return entry.rv
        if operation == "delete" and self.created:
            entry, _ = store.delete(claims, *self.created.pop(0))
            return entry.rv
        if operation == "slice-meta":
            entry, _ = store.patch(
                self.slice_resource, None, self.slices[n % len(self.slices)], "merge",
                self._meta_patch(),
            )  # fmt: skip
            return entry.rv
        namespace, name = self.claims[(n * 7919) % len(self.claims)]
        entry, _ = store.patch(claims, namespace, name, "merge", self._meta_patch())
        return entry.rv

    def run(self, rate: float, seconds: float) -> tuple[int, float, float, float]:
        """Writes at ``rate`` events per second for ``seconds``; returns the events sent, the
        achieved rate and the phase's start and end (wall clock)."""
        total = int(rate * seconds)
        began = time.time()
        started = time.perf_counter()
        sent = 0
        while sent < total:
            due = started + sent / rate
            wait = due - time.perf_counter()
            if wait > 0.001:
                time.sleep(wait)
            operation = CYCLE[sent % len(CYCLE)]
            at = time.time()
            self.sent_at[self._step(operation)] = at
            self.kinds[operation] += 1
            sent += 1
        elapsed = time.perf_counter() - started
        return sent, sent / elapsed, began, time.time()

    def backlog(self, count: int) -> int:
        """Writes ``count`` events of the same mix as fast as the store takes them."""
        for sent in range(count):
            operation = CYCLE[sent % len(CYCLE)]
            self._step(operation)
            self.kinds[operation] += 1
        return count


# -- page timings (parent, after the watcher) -----------------------------------------------------


def time_requests(client: Any, urls: list[str]) -> tuple[list[float], list[int]]:
    timings, statuses = [], []
    for url in urls:
        started = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
        statuses.append(response.status_code)
    return timings, statuses


def query_count(client: Any, url: str) -> tuple[int, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    return len(captured), response.status_code


def report_timings(label: str, timings: list[float], statuses: list[int], limit_ms: float) -> None:
    p95 = percentile(timings, 0.95)
    bad = sorted({s for s in statuses if s != 200})
    report(
        f"{label}: p50 / p95",
        f"{percentile(timings, 0.5):.0f} / {p95:.0f} ms",
        f"p95 ≤ {limit_ms:.0f} ms",
        p95 <= limit_ms and not bad,
    )
    if bad:
        print(f"    non-200 answers: {bad}")


def next_cursors(client: Any, urls: list[str]) -> list[str | None]:
    """The ``next_cursor`` each URL's answer advertises (None where the API has none)."""
    return [client.get(url).json().get("next_cursor") for url in urls]


def api_timings(client: Any, api_url: str, devices: int, rounds: int) -> None:
    """The device API: first page, deep pages by offset and by cursor, a filtered list, and
    the JSON Lines export of every device."""
    pages = max(1, devices // 100)
    cases = [("API /api/v1/devices/?limit=100, first page", [f"{api_url}?limit=100"] * rounds)]
    # Deep pages: around the 300th of 400 (offset 29,900 at S40k), each a different page.
    deep = [min(pages - 1, max(1, pages * 3 // 4 + i - rounds // 2)) for i in range(rounds)]
    cases.append(
        (
            "API ?limit=100&offset=… (pages ~300 of 400, by offset)",
            [f"{api_url}?limit=100&offset={page * 100}" for page in deep],
        )
    )
    # The cursor of page N is what page N-1 advertises (one untimed request each).
    cursors = next_cursors(client, [f"{api_url}?limit=100&offset={(p - 1) * 100}" for p in deep])
    has_cursors = all(cursors)
    if has_cursors:
        cases.append(
            (
                "API ?limit=100&cursor=… (the same deep pages, by cursor)",
                [f"{api_url}?limit=100&cursor={cursor}" for cursor in cursors],
            )
        )
    else:
        print("  (no next_cursor in the device API's answers: cursor pages not timed)")
    query = "state=free&driver=gpu.nvidia.com"
    cases.append(
        (
            f"API ?limit=100&{query}, first page",
            [f"{api_url}?limit=100&{query}"] * rounds,
        )
    )
    filtered_count = client.get(f"{api_url}?limit=1&{query}").json()["count"]
    filtered_pages = max(1, filtered_count // 100)
    offsets = [((i * 7) % filtered_pages) * 100 for i in range(rounds)]
    cases.append(
        (
            f"API ?limit=100&{query}&offset=… (pages through the list)",
            [f"{api_url}?limit=100&{query}&offset={offset}" for offset in offsets],
        )
    )
    if has_cursors and filtered_pages > 1:
        cursors = next_cursors(
            client,
            [f"{api_url}?limit=100&{query}&offset={max(0, o - 100)}" for o in offsets if o],
        )
        cases.append(
            (
                f"API ?limit=100&{query}&cursor=… (the same pages)",
                [f"{api_url}?limit=100&{query}&cursor={cursor}" for cursor in cursors if cursor],
            )
        )
    for label, urls in cases:
        time_requests(client, urls[:5])  # warm up
        timings, statuses = time_requests(client, urls)
        report_timings(label, timings, statuses, 50)

    export_url = f"{api_url}export/"
    timings, lines = [], set()
    for _ in range(max(3, rounds // 10)):
        started = time.perf_counter()
        response = client.get(export_url)
        body = b"".join(response.streaming_content)
        timings.append((time.perf_counter() - started) * 1000)
        lines.add(body.count(b"\n"))
    counts = ", ".join(f"{n:,}" for n in sorted(lines))
    report(
        f"API export/ (JSON Lines, {counts} lines): p50 / max of {len(timings)}",
        f"{percentile(timings, 0.5):.0f} / {max(timings):.0f} ms",
        "≤ 2,000 ms",
        max(timings) <= 2000 and lines == {devices},
    )

    styles = {"offset": f"{api_url}?offset=100&"}
    if has_cursors:
        styles["cursor"] = f"{api_url}?cursor={next_cursors(client, [f'{api_url}?limit=100'])[0]}&"
    for style, url in styles.items():
        counts = [query_count(client, f"{url}limit={limit}")[0] for limit in (10, 100)]
        report(
            f"API: SQL queries for limit=10 / limit=100, by {style}",
            " / ".join(str(c) for c in counts),
            "constant",
            len(set(counts)) == 1,
        )


def page_timings(rounds: int) -> bool:
    """Device list page and API timings; False when those URLs are not there yet."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.urls import NoReverseMatch, reverse

    from devices.models import Device

    try:
        list_url = reverse("device-list")
        api_url = reverse("api:device-list")
    except NoReverseMatch as error:
        print(f"  (skipped: the device list page or API is not routed yet: {error})")
        return False
    with connection.cursor() as cursor:
        # Steady state: autovacuum would have run by now (visibility map, statistics).
        cursor.execute("VACUUM ANALYZE")
    user, _ = get_user_model().objects.update_or_create(
        username="bench-staff", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    devices = Device.objects.count()
    probe = client.get(list_url)
    if probe.status_code != 200:
        print(f"  (skipped: GET {list_url} answered {probe.status_code})")
        return False
    pages = max(1, devices // 50)
    page_cases = [
        ("device list page, 50 rows, no filter", "", pages),
        (
            "device list page, 50 rows, driver=gpu.nvidia.com&state=free",
            "driver=gpu.nvidia.com&state=free",
            0,
        ),
        (
            "device list page, 50 rows, state=allocated&model=NVIDIA H100 80GB HBM3",
            "state=allocated&model=NVIDIA+H100+80GB+HBM3",
            0,
        ),
    ]
    for label, query, page_count in page_cases:
        if not page_count:
            probe = client.get(f"{list_url}?{query}")
            count = probe.context["table"].paginator.count if probe.context else 0
            page_count = max(1, -(-count // 50))
        urls = [
            f"{list_url}?{query}{'&' if query else ''}page={1 + (i * 7919) % page_count}"
            for i in range(rounds)
        ]
        time_requests(client, urls[:5])  # warm up
        timings, statuses = time_requests(client, urls)
        bad = [s for s in statuses if s != 200]
        p95 = percentile(timings, 0.95)
        report(
            f"{label}: p50 / p95",
            f"{percentile(timings, 0.5):.0f} / {p95:.0f} ms",
            "p95 ≤ 100 ms",
            p95 <= 100 and not bad,
        )
        if bad:
            print(f"    non-200 answers: {sorted(set(bad))}")
    client.get(list_url)  # the filter form's choices are cached for 30 s: count with them warm
    counts = {
        per_page: query_count(client, f"{list_url}?driver=gpu.nvidia.com&per_page={per_page}")
        for per_page in (10, 50, 100)
    }
    report(
        "device list page: SQL queries for 10 / 50 / 100 rows",
        " / ".join(str(c) for c, _ in counts.values()),
        "constant",
        len({c for c, _ in counts.values()}) == 1,
    )

    api_timings(client, api_url, devices, rounds)
    return True


def node_and_dashboard_timings(rounds: int) -> None:
    """Node list, node detail and dashboard at S40k, as the device list above (staff user)."""
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    from devices.models import Node

    user = get_user_model().objects.get(username="bench-staff")
    client = Client()
    client.force_login(user)
    names = list(Node.objects.order_by("name").values_list("name", flat=True))
    if not names:
        print("  (skipped: no nodes mirrored)")
        return
    node_list = reverse("node-list")
    pages = max(1, len(names) // 50)
    cases = [
        (
            "node list page, no filter",
            [f"{node_list}?page={1 + (i * 7919) % pages}" for i in range(rounds)],
            "p95 ≤ 100 ms",
            100.0,
        ),
        (
            "node detail page (8 GPUs, allocated claims)",
            [reverse("node-detail", args=[names[(i * 7919) % len(names)]]) for i in range(rounds)],
            "p95 ≤ 100 ms",
            100.0,
        ),
        ("dashboard", [reverse("dashboard")] * rounds, "p95 ≤ 150 ms", 150.0),
    ]
    for label, urls, target, limit in cases:
        time_requests(client, urls[:5])
        timings, statuses = time_requests(client, urls)
        bad = sorted({s for s in statuses if s != 200})
        p95 = percentile(timings, 0.95)
        report(
            f"{label}: p50 / p95",
            f"{percentile(timings, 0.5):.0f} / {p95:.0f} ms",
            target,
            p95 <= limit and not bad,
        )
        if bad:
            print(f"    non-200 answers: {bad}")


# -- main -----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 nodes, 3,600 claims, 10 s")
    parser.add_argument("--nodes", type=int, default=None)
    parser.add_argument("--claims", type=int, default=None)
    parser.add_argument("--watch-seconds", type=float, default=None)
    parser.add_argument("--rate", type=float, default=1000.0, help="watch events per second")
    parser.add_argument(
        "--burst-rate",
        type=float,
        default=2500.0,
        help="a second watch phase at this rate (the scheduler's burst; 0: none)",
    )
    parser.add_argument(
        "--backlog", type=int, default=None, help="events of the backlog phase (60,000)"
    )
    parser.add_argument("--page-rounds", type=int, default=50)
    parser.add_argument("--skip-pages", action="store_true")
    parser.add_argument(
        "--pages-only",
        action="store_true",
        help="only time the pages, on what the database holds (a previous run's mirror)",
    )
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="cProfile the watcher into FILE.cold, FILE.resync and FILE.watch-<kind>",
    )
    parser.add_argument("--json", metavar="FILE", help="also write every figure to FILE")
    parser.add_argument(
        "--sizes",
        metavar="N,N,…",
        help="how cost grows: cold mirror, resync and pages at each node count (500,5000,50000)",
    )
    parser.add_argument("--watcher-only", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sizes:
        growth([int(size) for size in args.sizes.split(",")], args.page_rounds)
        return
    nodes = args.nodes or (500 if args.quick else 5_000)
    claims = args.claims if args.claims is not None else nodes * GPUS_PER_NODE * 9 // 10
    watch_seconds = args.watch_seconds or (10.0 if args.quick else 60.0)
    args.backlog = args.backlog if args.backlog is not None else (6_000 if args.quick else 60_000)

    if args.watcher_only:
        watcher_main(args.watcher_only, watch_seconds, args.profile)
        return

    ensure_database()
    setup_django(migrate=True)
    if args.pages_only:
        from django.conf import settings

        settings.DEBUG = False
        warnings.filterwarnings("ignore", message="No directory at")
        print(f"Machine: {machine()}\nPages (Django test Client, server time, staff user):")
        if page_timings(args.page_rounds):
            node_and_dashboard_timings(args.page_rounds)
        return
    from django.db import connection

    from apiemulator import Emulator

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        pg_version = cursor.fetchone()[0]
    print(f"Machine: {machine()}, PostgreSQL {pg_version}")
    flush_mirror_tables()
    connection.close()

    started = time.perf_counter()
    scenario = build_scenario(nodes, claims)
    claim_keys = [
        (c["metadata"]["namespace"], c["metadata"]["name"]) for c in scenario["resourceclaims"]
    ]
    slice_names = [s["metadata"]["name"] for s in scenario["resourceslices"]]
    print(
        f"Scenario: {nodes:,} nodes, {len(slice_names):,} slices, "
        f"{len(slice_names) * GPUS_PER_NODE:,} devices, {claims:,} allocated claims in "
        f"{len(NAMESPACES)} namespaces (built in {time.perf_counter() - started:.1f} s)"
    )
    # The scenario's claims name pods as their owners, which it does not serve (a real cluster
    # has them): the emulator's garbage collector would mark every claim deleted within 2 s,
    # and its passes over all objects hold the store (27 s for 460,000 objects, during the
    # cold list of nodes at 50,000 nodes). No collector, as in benchmarks/load.py.
    emulator = Emulator(port=0, bookmark_interval=1.0, garbage_collection_interval=None)
    started = time.perf_counter()
    emulator.load([obj for objects in scenario.values() for obj in objects], copy_objects=False)
    del scenario
    # The stand-in API server is a Python process holding 46,000 objects: frozen out of the
    # cyclic collector, whose passes over them otherwise stalled the first list pages it
    # served (a real kube-apiserver has no such pauses), which the watcher's cold figures
    # then counted (nodes: 0.26 s in some runs, 1.2 s in others).
    gc.collect()
    gc.freeze()
    emulator.start()
    print(f"Emulator loaded in {time.perf_counter() - started:.1f} s at {emulator.url}\n")

    child = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--watcher-only",
            emulator.url,
            "--watch-seconds",
            str(watch_seconds),
            *(["--profile", args.profile] if args.profile else []),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None

    def receive(tag: str) -> Any:
        for line in child.stdout:
            if line.startswith(f"BENCH {tag} "):
                return json.loads(line[len(f"BENCH {tag} ") :])
            print(f"  [watcher] {line.rstrip()}")
        sys.exit(f"the watcher process ended early (exit {child.wait()})")

    try:
        lists = receive("lists")
        print(
            "Watcher process (cold mirror, resync), RSS at start "
            f"{lists['rss_mib_before']:,.0f} MiB, after the memberships "
            f"{lists['rss_mib_after_memberships']:,.0f} MiB; highest while running: "
            + ", ".join(
                f"{label} {mib:,.0f} MiB"
                for label, mib in sorted(lists["rss_peaks"].items(), key=lambda item: -item[1])[:3]
            )
        )
        cold, resync = lists["cold"], lists["resync"]
        for kind, figures in cold.items():
            if isinstance(figures, dict) and "seconds" in figures:
                print(
                    f"    cold {kind:<24} {figures['seconds']:6.2f} s, "
                    f"{figures['written']:>6} objects written, watcher RSS after it "
                    f"{figures['rss_mib']:,.0f} MiB"
                )
        floor = lists["floor"]
        until_right = cold["total_seconds"] + lists["class_refresh_seconds"]
        report("cold mirror: every kind listed and written", f"{cold['total_seconds']:.2f} s")
        report(
            "  + device-class memberships (a Celery task after the relist)",
            f"{lists['class_refresh_seconds']:.2f} s",
        )
        report("cold mirror until pages are right (states, memberships)", f"{until_right:.2f} s")
        print(
            "    floor per kind: "
            + ", ".join(f"{kind} {seconds:.2f} s" for kind, seconds in floor["seconds"].items())
        )
        print(
            "    floor rows: "
            + ", ".join(f"{table} {count:,}" for table, count in floor["rows"].items())
        )
        report(
            "floor: LIST + decode + flatten + COPY into plain tables",
            f"{floor['total_seconds']:.2f} s",
        )
        ratio = until_right / floor["total_seconds"]
        report("cold mirror / floor", f"{ratio:.2f}×", "≤ 1.5×", ratio <= 1.5)
        tuples = cold["tuples"]
        print(
            "    rows inserted: "
            + ", ".join(f"{name} {counts[0]:,}" for name, counts in sorted(tuples.items()))
        )
        written = sum(
            f["written"] + f["deleted"]
            for f in resync.values()
            if isinstance(f, dict) and "written" in f
        )
        report(
            "resync with no changes",
            f"{resync['total_seconds']:.2f} s",
            "≤ 1.5 s",
            resync["total_seconds"] <= 1.5,
        )
        row_writes = sum(sum(counts) for counts in resync["tuples"].values())
        report(
            "resync: objects written (Applied) / row writes (pg_stat_user_tables)",
            f"{written} / {row_writes}",
            "0 / 0",
            written == 0 and row_writes == 0,
        )
        print(
            "    (MirrorStatus bookkeeping rows updated during the resync, not counted: "
            f"{resync['status_tuples'][1]})"
        )

        report("database size after the cold mirror", f"{database_mib():,.0f} MiB")
        receive("ready")
        churn = Churn(emulator, claim_keys, slice_names)
        phases = []
        for rate, target in ((args.rate, 1.0), (args.burst_rate, 2.0)):
            if not rate:
                continue
            sent, achieved, began, ended = churn.run(rate, watch_seconds)
            phases.append((rate, target, sent, achieved, began, ended))
        total_sent = sum(phase[2] for phase in phases)
        child.stdin.write(f"STOP {total_sent}\n")
        child.stdin.flush()
        watch = receive("watch")
        committed = dict(watch["committed"])
        mix = ", ".join(f"{op} {count:,}" for op, count in sorted(churn.kinds.items()))
        print(f"\nWatch load, mixed: {mix}")
        for rate, target, sent, achieved, began, ended in phases:
            print(f"  at {rate:,.0f} events/s for {watch_seconds:.0f} s:")
            versions = [v for v, at in churn.sent_at.items() if began <= at <= ended]
            lags = [committed[v] - churn.sent_at[v] for v in versions if v in committed]
            report(
                "  events sent / achieved rate",
                f"{sent:,} / {achieved:,.0f}/s",
                f"{rate:,.0f}/s",
                achieved >= 0.99 * rate,
            )
            report(
                "  events committed by the watcher",
                f"{len(lags):,}",
                f"{len(versions):,}",
                len(lags) == len(versions),
            )
            report(
                "  watch lag, event sent → row committed: p50",
                f"{percentile(lags, 0.5) * 1000:.0f} ms",
            )
            p99 = percentile(lags, 0.99)
            report(
                "  watch lag, event sent → row committed: p99",
                f"{p99 * 1000:.0f} ms",
                f"≤ {target:.0f} s",
                p99 <= target,
            )
            report(
                "  watch lag, event sent → row committed: max",
                f"{max(lags, default=float('nan')) * 1000:.0f} ms",
            )
        # The watcher is not watching now: a backlog piles up, then it resumes from the
        # resourceVersion it saved (a restart, a watcher down for a minute at 1,000/s).
        started = time.perf_counter()
        backlog = churn.backlog(args.backlog)
        written_in = time.perf_counter() - started
        child.stdin.write(f"DRAIN {backlog}\n")
        child.stdin.flush()
        drain = receive("drain")
        print(f"  a backlog of {backlog:,} events (written in {written_in:.1f} s), then watched:")
        report(
            "  events committed from the backlog",
            f"{drain['committed']:,}",
            f"{backlog:,}",
            drain["committed"] >= backlog,
        )
        rate = drain["committed"] / drain["seconds"] if drain["seconds"] else 0.0
        report(
            "  backlog drain rate (watch start → last event committed)",
            f"{rate:,.0f} events/s in {drain['seconds']:.1f} s",
            "≥ 5,000/s",
            rate >= 5000,
        )
        watch["peak_rss_mib"] = max(watch["peak_rss_mib"], drain["peak_rss_mib"])
        report(
            "watcher peak RSS (cold mirror + resync)",
            f"{lists['peak_rss_mib_after_lists']:.0f} MiB",
            "≤ 512 MiB",
            lists["peak_rss_mib_after_lists"] <= 512,
        )
        report(
            "watcher peak RSS (whole run, watch and backlog included)",
            f"{watch['peak_rss_mib']:.0f} MiB",
            "≤ 512 MiB",
            watch["peak_rss_mib"] <= 512,
        )
        child.stdin.close()
        child.wait(60)
    finally:
        if child.poll() is None:
            child.kill()
        emulator.stop()

    if not args.skip_pages:
        from django.conf import settings

        settings.DEBUG = False  # as in production (queries are still counted where asked)
        warnings.filterwarnings("ignore", message="No directory at")  # collectstatic not run
        print("\nPages (Django test Client, server time, staff user):")
        if page_timings(args.page_rounds):
            node_and_dashboard_timings(args.page_rounds)
    print(f"\nMachine: {machine()}, PostgreSQL {pg_version}")
    if args.json:
        Path(args.json).write_text(json.dumps({"nodes": nodes, "claims": claims, "rows": ROWS}))


# -- how cost grows with the cluster --------------------------------------------------------------

# (label prefix of a report row, name in the growth table, unit): the row's last number is taken
# (a "p50 / p95" row gives its p95, the export's "p50 / max" its max).
GROWTH_FIGURES = [
    ("cold mirror until pages are right", "cold mirror until pages are right", "s"),
    ("floor: LIST", "the floor (LIST + decode + flatten + COPY)", "s"),
    ("resync with no changes", "resync, nothing changed", "s"),
    ("watcher peak RSS (cold mirror + resync)", "watcher peak RSS", "MiB"),
    ("database size after the cold mirror", "database size", "MiB"),
    ("device list page, 50 rows, no filter", "device list page p95", "ms"),
    ("node list page, no filter", "node list page p95", "ms"),
    ("dashboard", "dashboard p95", "ms"),
    ("API /api/v1/devices/?limit=100, first page", "API first page p95", "ms"),
    ("API ?limit=100&cursor=", "API deep page by cursor p95", "ms"),
    ("API export/", "JSON Lines export of every device, max of 5", "ms"),
]
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def growth_value(rows: list[list[str]], prefix: str) -> float | None:
    """The last number of the first report row whose label starts with ``prefix``."""
    for label, value, _target, _verdict in rows:
        if label.strip().startswith(prefix):
            numbers = _NUMBER.findall(value)
            return float(numbers[-1].replace(",", "")) if numbers else None
    return None


def growth(sizes: list[int], page_rounds: int) -> None:
    """Runs the cold mirror, the resync and the pages at each size (no watch phases: their
    rates do not grow with the cluster) in a process of its own, then prints each figure per
    size with its growth against the cluster's."""
    results = []
    for nodes in sizes:
        with tempfile.NamedTemporaryFile(suffix=".json") as output:
            print(f"\n=== {nodes:,} nodes ===", flush=True)
            started = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--nodes",
                    str(nodes),
                    "--rate",
                    "0",
                    "--burst-rate",
                    "0",
                    "--backlog",
                    "0",
                    "--page-rounds",
                    str(page_rounds),
                    "--json",
                    output.name,
                ],
                check=True,
            )
            result = json.loads(Path(output.name).read_text())
            result["seconds"] = time.perf_counter() - started
            results.append(result)
    print(f"\nHow cost grows with the cluster ({GPUS_PER_NODE} GPUs a node, 0.9 claims a GPU):")
    header = "".join(f"{r['nodes']:>12,} nodes" for r in results)
    pairs = zip(results, results[1:], strict=False)
    steps = "".join(f"   ×{b['nodes'] / a['nodes']:g} cluster" for a, b in pairs)
    print(f"  {'figure':<46}{header}{steps}")
    for prefix, name, unit in GROWTH_FIGURES:
        values = [growth_value(r["rows"], prefix) for r in results]
        cells = "".join(
            f"{'–' if v is None else f'{v:,.2f} {unit}' if unit == 's' else f'{v:,.0f} {unit}':>18}"
            for v in values
        )
        ratios = "".join(
            f"{'–' if not a or b is None else f'×{b / a:.1f}':>16}"
            for a, b in zip(values, values[1:], strict=False)
        )
        print(f"  {name:<46}{cells}{ratios}")
    print(
        "  whole run per size: "
        + ", ".join(f"{r['nodes']:,} nodes {r['seconds']:.0f} s" for r in results)
    )
    print(f"Machine: {machine()}")


if __name__ == "__main__":
    main()
