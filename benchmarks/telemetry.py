"""Telemetry ingest benchmark: 5,000 nodes × 8 GPUs (40,000 GPUs) × 6 dcgm-exporter series per
15 s cycle, read from a Prometheus HTTP API served on loopback, into PostgreSQL.

Run: ``.venv/bin/python benchmarks/telemetry.py`` (``--nodes 500`` for a quick run). Needs
PostgreSQL: ``DATABASE_URL`` defaults to ``postgres://postgres@127.0.0.1:5432/dra_portal_bench_telemetry``;
the database is created when missing and migrated; its device and telemetry tables are emptied.

Prints: one ingest cycle (the query, decode, join, the latest-value upsert and the COPY of the
samples; median and max of ``--cycles``), one 5-minute rollup of a bucket (its samples: up to
20 cycles), and storage: bytes per raw sample and per rollup row measured with
``pg_total_relation_size``, and the steady-state size and daily write volume with the default
retention.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ.setdefault(
    "DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dra_portal_bench_telemetry"
)
GPUS_PER_NODE = 8
EMPTY_ANSWER = b'{"status": "success", "data": {"resultType": "vector", "result": []}}'
SERIES = (
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_GPU_TEMP",
)


def report(label: str, value: str, target: str = "–", met: bool | None = None) -> None:
    verdict = "" if met is None else ("met" if met else "MISSED")
    print(f"  {label:<58} {value:>14}   target {target:<10} {verdict}", flush=True)


def setup_database() -> None:
    import psycopg
    from django.conf import settings

    name = settings.DATABASES["default"]["NAME"]
    with psycopg.connect(
        host=settings.DATABASES["default"]["HOST"] or "127.0.0.1",
        user=settings.DATABASES["default"]["USER"] or "postgres",
        dbname="postgres",
        autocommit=True,
    ) as connection:
        if not connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [name]
        ).fetchone():
            connection.execute(f'CREATE DATABASE "{name}"')
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def populate(nodes: int) -> list[tuple[str, str, str]]:
    """Slices and devices of ``nodes`` DGX-like nodes; [(node, uuid, pci bus id)] per GPU."""
    from django.db import connection

    from devices.models import Device, DeviceRollup, DeviceSample, DeviceTelemetry, ResourceSlice

    with connection.cursor() as cursor:
        for model in (DeviceSample, DeviceRollup, DeviceTelemetry, Device, ResourceSlice):
            cursor.execute(f'TRUNCATE "{model._meta.db_table}" CASCADE')
    slices = ResourceSlice.objects.bulk_create(
        ResourceSlice(
            uid=str(uuid.uuid4()),
            name=f"node-{n:05d}-gpu",
            resource_version="1",
            raw={},
            driver="gpu.nvidia.com",
            pool_name=f"node-{n:05d}",
            node_name=f"node-{n:05d}",
        )
        for n in range(nodes)
    )
    gpus = []
    devices = []
    for n, slice_ in enumerate(slices):
        for g in range(GPUS_PER_NODE):
            gpu_uuid = f"GPU-{uuid.UUID(int=n * GPUS_PER_NODE + g + 1)}"
            pci = f"0000:{0x18 + g * 0x10:02x}:00.0"
            gpus.append((slice_.node_name, gpu_uuid, pci))
            devices.append(
                Device(
                    resource_slice=slice_,
                    driver="gpu.nvidia.com",
                    pool_name=slice_.pool_name,
                    name=f"gpu-{g}",
                    node_name=slice_.node_name,
                    device_type="gpu",
                    uuid=gpu_uuid,
                    pci_bus_id=pci,
                    memory_bytes=80 * 2**30,
                    raw={},
                    state="allocated" if g % 3 else "free",
                )
            )
    Device.objects.bulk_create(devices, batch_size=5000)
    return gpus


def prometheus_answers(gpus: list[tuple[str, str, str]], cycle: int) -> dict[str, bytes]:
    """What Prometheus answers the ingest's ``max by (Hostname, UUID, pci_bus_id, …) (METRIC)``
    instant queries: per metric, one series per GPU with those labels only."""
    answers = {}
    for position, name in enumerate(SERIES):
        result = []
        for i, (node, gpu_uuid, pci) in enumerate(gpus):
            util = (i * 7 + cycle * 13) % 100
            value = (util, util // 2, 40000 + util, 41000 - util, 300.5 + util, 40 + util // 5)
            result.append(
                {
                    "metric": {
                        "Hostname": node,
                        "UUID": gpu_uuid,
                        "pci_bus_id": "0000" + pci.upper(),
                    },
                    "value": [time.time(), str(value[position])],
                }
            )
        answers[name] = json.dumps(
            {"status": "success", "data": {"resultType": "vector", "result": result}}
        ).encode()
    return answers


def serve(state: dict) -> str:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            query = parse_qs(urlsplit(self.path).query).get("query", [""])[0]
            metric = query.rsplit("(", 1)[-1].rstrip(")")
            # A series dcgm-exporter does not publish by default (DCGM_FI_DEV_FB_RESERVED):
            # Prometheus answers its query with an empty vector.
            body = state["answers"].get(metric, EMPTY_ANSWER)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def page_timings(nodes: int, rounds: int) -> None:
    """The pages that read telemetry, at this scale: p50/p95 over ``rounds`` requests each
    (after a warm-up), as a portal admin, the Django test client in this process."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.urls import NoReverseMatch, reverse

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    user, _ = get_user_model().objects.update_or_create(
        username="bench-staff", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    cases = [("dashboard", "/", 150.0)]
    for i in range(3):
        node = f"node-{(i * 7919) % nodes:05d}"
        cases.append((f"node page ({node})", reverse("node-detail", args=[node]), 100.0))
    try:
        for i in range(3):
            node = f"node-{(i * 7919) % nodes:05d}"
            cases.append((f"node topology ({node})", reverse("node-topology", args=[node]), 100.0))
    except NoReverseMatch:
        pass
    for label, url, target in cases:
        for _ in range(3):
            response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        timings = []
        for _ in range(rounds):
            began = time.perf_counter()
            client.get(url)
            timings.append((time.perf_counter() - began) * 1000)
        p95 = percentile(timings, 0.95)
        report(
            f"{label} p50 / p95",
            f"{percentile(timings, 0.5):.0f} / {p95:.0f} ms",
            f"p95 ≤ {target:.0f} ms",
            p95 <= target,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--page-rounds", type=int, default=40)
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    from devices.models import DeviceRollup, DeviceSample, Resolution, TelemetrySource
    from devices.telemetry.ingest import _roll_up_bucket, ingest_source

    setup_database()
    started = time.perf_counter()
    gpus = populate(args.nodes)
    print(
        f"{len(gpus):,} GPUs on {args.nodes:,} nodes "
        f"({time.perf_counter() - started:.1f} s to create)"
    )
    TelemetrySource.objects.all().delete()
    state = {"answers": prometheus_answers(gpus, 0)}
    source = TelemetrySource.objects.create(
        name="bench", kind="prometheus", url=serve(state), timeout_seconds=60
    )

    import datetime

    start = datetime.datetime(2026, 11, 23, 12, 0, tzinfo=datetime.UTC)
    with connection.cursor() as cursor:
        cursor.execute("SHOW autovacuum")
        autovacuum = cursor.fetchone()[0] == "on"
    print(f"autovacuum {'on' if autovacuum else 'off: the benchmark vacuums between cycles'}")
    timings = []
    for cycle in range(args.cycles):
        state["answers"] = prometheus_answers(gpus, cycle)
        now = start + datetime.timedelta(seconds=15 * cycle)
        began = time.perf_counter()
        result = ingest_source(source, now, force=True)
        timings.append(time.perf_counter() - began)
        assert result.samples == len(gpus) and not result.error, result
        if not autovacuum:
            # What autovacuum does between two cycles 15 s apart (untimed): this machine's
            # PostgreSQL runs with it off, and back-to-back cycles give it no time anyway.
            with connection.cursor() as cursor:
                cursor.execute("VACUUM devices_devicetelemetry")
    print(f"{args.cycles} cycles; the first (inserting every latest-value row) {timings[0]:.2f} s")
    steady = timings[1:] or timings
    median = statistics.median(steady)
    target = 1.0 * len(gpus) / 40000
    report(
        f"ingest cycle, {len(gpus):,} GPUs × 6 series (median)",
        f"{median * 1000:.0f} ms",
        f"≤ {target * 1000:.0f} ms",
        median <= target,
    )
    report("ingest cycle (max)", f"{max(steady) * 1000:.0f} ms")

    began = time.perf_counter()
    rows = _roll_up_bucket(Resolution.FIVE_MINUTES, start)
    rollup = time.perf_counter() - began
    report(
        f"5-minute rollup of {rows:,} devices × {min(args.cycles, 20)} samples",
        f"{rollup * 1000:.0f} ms",
    )
    began = time.perf_counter()
    _roll_up_bucket(Resolution.HOUR, start)
    report("hourly rollup from the 5-minute rows", f"{(time.perf_counter() - began) * 1000:.0f} ms")

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_total_relation_size(%s), pg_total_relation_size(%s)",
            [DeviceSample._meta.db_table, DeviceRollup._meta.db_table],
        )
        sample_bytes, rollup_bytes = cursor.fetchone()
    samples = DeviceSample.objects.count()
    rollups = DeviceRollup.objects.count()
    per_sample = sample_bytes / samples
    per_rollup = rollup_bytes / rollups
    gpu_count = len(gpus)
    per_day_cycles = 86400 / 15
    raw_hours = settings.TELEMETRY_RAW_RETENTION.total_seconds() / 3600
    five_days = settings.TELEMETRY_5M_RETENTION.total_seconds() / 86400
    hour_days = settings.TELEMETRY_1H_RETENTION.total_seconds() / 86400
    raw_steady = per_sample * gpu_count * raw_hours * 240
    five_steady = per_rollup * gpu_count * 288 * five_days
    hour_steady = per_rollup * gpu_count * 24 * hour_days
    written_per_day = (per_sample * per_day_cycles + per_rollup * (288 + 24)) * gpu_count
    scale = 40000 / gpu_count
    report("bytes per raw sample (table + indexes)", f"{per_sample:.0f} B")
    report("bytes per rollup row (table + indexes)", f"{per_rollup:.0f} B")
    report("at 40,000 GPUs: raw samples kept (steady)", f"{raw_steady * scale / 2**30:.2f} GiB")
    report(
        "at 40,000 GPUs: 5-minute rollups kept (steady)", f"{five_steady * scale / 2**30:.2f} GiB"
    )
    report("at 40,000 GPUs: hourly rollups kept (steady)", f"{hour_steady * scale / 2**30:.2f} GiB")
    report(
        "at 40,000 GPUs: retained growth per day (5m + 1h rollups)",
        f"{(per_rollup * (288 + 24) * gpu_count * scale) / 2**30:.2f} GiB",
        "≤ 2 GiB",
        per_rollup * (288 + 24) * gpu_count * scale <= 2 * 2**30,
    )
    report(
        "at 40,000 GPUs: written per day (raw samples included)",
        f"{written_per_day * scale / 2**30:.1f} GiB",
    )
    if args.page_rounds:
        page_timings(args.nodes, args.page_rounds)


if __name__ == "__main__":
    main()
