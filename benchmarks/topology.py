"""Topology and sharing pages at scale: the demo cluster plus 5,000 DGX H100 nodes (40,000
GPUs), 36,000 allocated claims and a latest reading for every device, on PostgreSQL.

Run: ``.venv/bin/python benchmarks/topology.py`` (``--nodes 500`` for a quick run). Needs
PostgreSQL: ``DATABASE_URL`` defaults to ``postgres://postgres@127.0.0.1:5432/dra_portal_bench_topology``;
the database is created when missing and migrated; its mirror tables are emptied first.

Prints p50 / p95 of the server side of each page (Django's test ``Client``, no network), and
the p50 of the process's own CPU time, for a portal admin and for a tenant member: a DGX H100
node's topology, the A100 MIG node's (8 GPUs, 200 placements), the sharing page's tabs, and the
node pages for reference.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ.setdefault(
    "DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dra_portal_bench_topology"
)

from benchmarks.mirror import (  # noqa: E402 - after the settings are chosen
    build_scenario,
    ensure_database,
    flush_mirror_tables,
    percentile,
    setup_django,
)


def populate(nodes: int, claims: int) -> None:
    import json

    from django.utils import timezone

    from devices.models import Device, DeviceTelemetry
    from mirror.classes import refresh_class_matches
    from mirror.store import load

    started = time.perf_counter()
    objects = []
    for path in sorted((ROOT / "devices" / "fixtures").glob("*.json")):
        objects.extend(json.loads(path.read_text())["items"])
    scenario = build_scenario(nodes, claims)
    for kind, items in (
        ("Node", scenario["nodes"]),
        ("ResourceSlice", scenario["resourceslices"]),
        ("ResourceClaim", scenario["resourceclaims"]),
    ):
        objects.extend({**item, "kind": kind} for item in items)
    for start in range(0, len(objects), 5000):
        load(objects[start : start + 5000])
    refresh_class_matches()
    now = timezone.now()
    DeviceTelemetry.objects.all().delete()
    DeviceTelemetry.objects.bulk_create(
        (
            DeviceTelemetry(
                driver=driver,
                pool_name=pool,
                device_name=name,
                node_name=node,
                uuid=device_uuid or str(uuid.uuid4()),
                sampled_at=now,
                gpu_util=(pk * 37) % 101,
                fb_used_mib=1024,
                fb_total_mib=81559,
            )
            for pk, driver, pool, name, node, device_uuid in Device.objects.exclude(
                device_type="mig", state="free"
            ).values_list("pk", "driver", "pool_name", "name", "node_name", "uuid")
        ),
        batch_size=5000,
    )
    print(
        f"populated {Device.objects.count():,} devices, {DeviceTelemetry.objects.count():,} "
        f"readings in {time.perf_counter() - started:.0f} s",
        flush=True,
    )


def time_pages(label: str, client: object, urls: list[str], rounds: int) -> None:
    for url in urls:
        client.get(url)  # type: ignore[attr-defined]
        samples, cpu = [], []
        for _ in range(rounds):
            started, started_cpu = time.perf_counter(), time.process_time()
            response = client.get(url)  # type: ignore[attr-defined]
            samples.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
            assert response.status_code == 200, (url, response.status_code)
        # CPU: this process's own time (Python and the driver), which a busy machine inflates
        # far less than the wall clock; the database's time is in the wall clock only.
        print(
            f"  {label:<7} {url:<42} p50 {percentile(samples, 0.5) * 1000:6.1f} ms"
            f"   p95 {percentile(samples, 0.95) * 1000:6.1f} ms"
            f"   CPU p50 {percentile(cpu, 0.5) * 1000:6.1f} ms",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--claims", type=int, default=36000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--keep", action="store_true", help="reuse the populated database")
    args = parser.parse_args()
    ensure_database()
    setup_django(migrate=True)

    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    from devices.models import Device
    from portal.models import Membership, Tenant
    from portal.services import tenants as tenant_services

    settings.ALLOWED_HOSTS = ["*"]
    if not args.keep or not Device.objects.exists():
        flush_mirror_tables()
        populate(args.nodes, min(args.claims, args.nodes * 8))
    users = get_user_model().objects
    root = users.create_user(f"bench-root-{uuid.uuid4().hex[:6]}", is_staff=True)
    member = users.create_user(f"bench-member-{uuid.uuid4().hex[:6]}")
    # The member's tenant owns one of the scenario's six namespaces (6,000 of its claims).
    tenant = Tenant.objects.filter(slug="bench-topology").first()
    tenant = tenant_services.save_tenant(
        actor=None,
        tenant=tenant,
        namespaces=["team-a"],
        name="Bench topology",
        slug="bench-topology",
    )
    tenant_services.set_member(actor=None, tenant=tenant, user=member, role=Membership.Role.MEMBER)
    urls = [
        "/nodes/node-00042/topology/",
        "/nodes/dgx-a100-01/topology/",
        "/nodes/dgx-h100-02/topology/",
        "/sharing/?tab=pods",
        "/sharing/?tab=devices",
        "/sharing/?tab=configs",
        "/sharing/?tab=observers",
        # for reference, under the same conditions: the node pages the topology is linked from
        "/nodes/node-00042/",
        "/nodes/dgx-a100-01/",
    ]
    print(f"{args.nodes:,} nodes, {args.rounds} requests per page after one warm-up:")
    for label, user in (("admin", root), ("member", member)):
        client = Client()
        client.force_login(user)
        time_pages(label, client, urls, args.rounds)


if __name__ == "__main__":
    main()
