"""The floor of a cold mirror: the work no mirror of these objects can skip.

For every mirrored kind: LIST it page by page over HTTP (the same client, emulator and page size
as the mirror), decode each page with the fastest decoder we have (msgspec), flatten every object
into the rows the mirror keeps for it (object, devices, allocation results, consumers, allocation
records: the same row counts), and COPY them into plain tables (no index, no constraint, no
trigger) in a scratch schema. No comparison with stored versions, no derived state, no Django.

``benchmarks/mirror.py`` runs it in the watcher process right after the real cold mirror and
prints the ratio of the two. Used only by the benchmark.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

SCHEMA = "bench_floor"

# Table → columns (all text or jsonb: the floor does not convert types the mirror converts).
TABLES: dict[str, list[tuple[str, str]]] = {
    "objects": [
        ("kind", "text"),
        ("uid", "text"),
        ("namespace", "text"),
        ("name", "text"),
        ("resource_version", "text"),
        ("raw", "jsonb"),
    ],
    "devices": [
        ("slice_uid", "text"),
        ("driver", "text"),
        ("pool", "text"),
        ("name", "text"),
        ("attributes", "jsonb"),
        ("capacity", "jsonb"),
    ],
    "results": [
        ("claim_uid", "text"),
        ("request", "text"),
        ("driver", "text"),
        ("pool", "text"),
        ("device", "text"),
    ],
    "consumers": [("claim_uid", "text"), ("resource", "text"), ("name", "text"), ("uid", "text")],
    "records": [
        ("claim_uid", "text"),
        ("namespace", "text"),
        ("driver", "text"),
        ("pool", "text"),
        ("device", "text"),
        ("started_at", "text"),
    ],
}

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode

Rows = dict[str, list[tuple[Any, ...]]]


def _flatten(kind: str, items: list[dict[str, Any]]) -> Rows:
    rows: Rows = {name: [] for name in TABLES}
    objects, devices, results = rows["objects"], rows["devices"], rows["results"]
    consumers, records = rows["consumers"], rows["records"]
    for item in items:
        meta = item.get("metadata") or {}
        uid = meta.get("uid", "")
        objects.append(
            (
                kind,
                uid,
                meta.get("namespace", ""),
                meta.get("name", ""),
                meta.get("resourceVersion", ""),
                _encode(item).decode(),
            )
        )
        spec = item.get("spec") or {}
        if kind == "resourceslices":
            driver, pool = spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")
            for device in spec.get("devices") or []:
                devices.append(
                    (
                        uid,
                        driver,
                        pool,
                        device.get("name", ""),
                        _encode(device.get("attributes") or {}).decode(),
                        _encode(device.get("capacity") or {}).decode(),
                    )
                )
        elif kind == "resourceclaims":
            status = item.get("status") or {}
            allocation = status.get("allocation") or {}
            for result in (allocation.get("devices") or {}).get("results") or []:
                key = (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
                results.append((uid, result.get("request", ""), *key))
                records.append((uid, meta.get("namespace", ""), *key, meta["creationTimestamp"]))
            for consumer in status.get("reservedFor") or []:
                consumers.append(
                    (uid, consumer.get("resource", ""), consumer.get("name", ""), consumer["uid"])
                )
    return rows


def _pages(cluster: Any, kind: Any, page_size: int) -> Iterator[list[dict[str, Any]]]:
    from kube.kinds import KINDS

    path = KINDS[kind].path(None)
    continue_: str | None = None
    while True:
        query = [("limit", str(page_size))] + ([("continue", continue_)] if continue_ else [])
        response = cluster._send("GET", path, query=query)
        try:
            page = _decode(response.data)
        finally:
            response.release_conn()
        yield page.get("items") or []
        continue_ = (page.get("metadata") or {}).get("continue")
        if not continue_:
            return


def measure_floor(
    cluster: Any, kinds: list[Any], connect: Callable[[], Any], page_size: int = 500
) -> dict[str, Any]:
    """Seconds per kind and in all, and the rows written per table. ``connect`` returns a new
    psycopg connection (autocommit off); the scratch schema is dropped afterwards."""
    conn = connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
            cursor.execute(f"CREATE SCHEMA {SCHEMA}")
            for table, columns in TABLES.items():
                spec = ", ".join(f"{name} {type_}" for name, type_ in columns)
                cursor.execute(f"CREATE TABLE {SCHEMA}.{table} ({spec})")
        conn.commit()
        seconds: dict[str, float] = {}
        counts = dict.fromkeys(TABLES, 0)
        total_started = time.perf_counter()
        for kind in kinds:
            started = time.perf_counter()
            with conn.cursor() as cursor:
                for items in _pages(cluster, kind, page_size):
                    for table, rows in _flatten(kind.value, items).items():
                        if not rows:
                            continue
                        names = ", ".join(name for name, _ in TABLES[table])
                        with cursor.copy(f"COPY {SCHEMA}.{table} ({names}) FROM STDIN") as copy:
                            for row in rows:
                                copy.write_row(row)
                        counts[table] += len(rows)
            conn.commit()
            seconds[kind.value] = time.perf_counter() - started
        total = time.perf_counter() - total_started
        with conn.cursor() as cursor:
            cursor.execute(f"DROP SCHEMA {SCHEMA} CASCADE")
        conn.commit()
    finally:
        conn.close()
    return {"seconds": seconds, "total_seconds": total, "rows": counts}
