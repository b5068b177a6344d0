"""Load and faults on the production stack: ten minutes of locust users against the portal on
loopback, with the 5,000-node mirror, while its parts are killed and its services restarted.

Run: ``.venv/bin/pip install -e ".[load]"`` once (locust), then
``.venv/bin/python benchmarks/load.py`` (``--quick``: 500 nodes, 3 minutes, the same faults at
scaled times). Needs PostgreSQL's server binaries (``initdb``) and ``redis-server``: the run
makes a PostgreSQL and a Redis of its own, since it restarts them.

The stack (``harness/stack.py``) is what ``deploy/`` runs, as processes: gunicorn (3 workers),
two ``manage.py watch`` replicas, the allocator (one process), the lifecycle worker, the
backstop worker and Celery beat, with ``DEBUG=false``; the cluster is the API emulator in this
process, holding ``--nodes`` DGX H100 nodes (8 GPUs each), ``--claims`` allocated claims and
the demo's objects. The users (``benchmarks/load_scenario.py``): people browsing pages, API
clients paging devices by cursor, members previewing, submitting and releasing claims (some
past the approval rule), tenant admins approving.

Faults, at fixed fractions of the run (at 10 minutes: the second given):

====  ==========================================================================
  60  the watcher replica holding every kind is killed (SIGKILL); the kubelet's
      restart of it comes back 10 s later as a standby
 150  the allocator is killed (SIGKILL) under load; back 5 s later
 240  PostgreSQL stops (fast shutdown) for 15 s
 330  Redis stops for 15 s
 420  the API server goes away for 60 s
====  ==========================================================================

Afterwards the run waits for every request to settle and checks: no submitted request lost or
stuck, one claim per active request and none for an ended one, no tenant ever above its quota
(sampled every 2 s from the usage API), the mirror equal to the cluster. It prints requests/s,
p50/p95/p99 per kind of request, answers by status, and every response of 500 or more, inside
or outside the announced 503 windows (while PostgreSQL or Redis is away, until ``/readyz``
answers again); ``--report FILE`` writes the tables as Markdown too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

from benchmarks.mirror import GPUS_PER_NODE, build_scenario, machine, percentile  # noqa: E402
from harness.stack import (  # noqa: E402
    Postgres,
    Redis,
    Stack,
    fetch,
    missing_redis_server,
    wait_for,
)

PASSWORD = "load-test-password-1"  # noqa: S105 - throwaway accounts of a throwaway database
# (role, username, tenant, membership role): the accounts the locust users sign in as.
ACCOUNTS = [
    *[("browser", f"viewer-{n}", "team-a" if n % 2 else "team-b", "member") for n in range(6)],
    *[("api", f"script-{n}", "team-b", "member") for n in range(4)],
    ("member", "bob", "team-a", "member"),
    ("member", "dana", "team-a", "member"),
    ("member", "eve", "team-a", "member"),
    ("member", "carol", "team-b", "member"),
    ("member", "finn", "team-b", "member"),
    ("admin", "alice", "team-a", "tenant_admin"),
]
NAMESPACE = {"team-a": "gpu-test1", "team-b": "gpu-test5"}
ACTIVE_STATES = ("submitted", "pending_approval", "allocating", "releasing")
# The faults' times as fractions of the run (60 s … 420 s of 600 s).
FAULTS = [
    (0.10, "watcher"),
    (0.25, "allocator"),
    (0.40, "postgresql"),
    (0.55, "redis"),
    (0.70, "apiserver"),
]


def say(*parts: object) -> None:
    print(f"[{time.strftime('%H:%M:%S')}]", *parts, flush=True)


# -- the stack -----------------------------------------------------------------------------------


def scenario_objects(nodes: int, claims: int) -> list[dict[str, Any]]:
    from harness.fixtures import fixture_objects

    scenario = build_scenario(nodes, claims)
    scenario.pop("deviceclasses")  # the demo's fixtures have them
    return fixture_objects() + [obj for objects in scenario.values() for obj in objects]


def create_accounts(stack: Stack) -> dict[str, list[dict[str, str]]]:
    """The load's accounts and tokens, and quotas the members can fill: team-a 16 GPUs in 12
    claims, more than 4 at once waiting for alice; team-b 8 in 8."""
    code = f"""
import json
from django.contrib.auth.models import User
from portal.models import Membership, Tenant
from portal.services.api_tokens import issue_api_token
from portal.services.tenants import save_quota, set_member
accounts = {ACCOUNTS!r}
namespaces = {NAMESPACE!r}
teams = {{slug: Tenant.objects.get(slug=slug) for slug in namespaces}}
save_quota(actor=None, tenant=teams['team-a'], device_class_name='gpu.nvidia.com',
    max_devices=16, max_claims=12, approve_above_devices=4, approve_over_quota=True)
save_quota(actor=None, tenant=teams['team-b'], device_class_name='gpu.nvidia.com',
    max_devices=8, max_claims=8)
out = {{}}
for role, username, slug, member_role in accounts:
    user, _ = User.objects.get_or_create(username=username)
    user.set_password({PASSWORD!r}); user.save()
    set_member(actor=None, tenant=teams[slug], user=user, role=Membership.Role(member_role))
    token = issue_api_token(user=user, name='load', lifetime=None).secret
    out.setdefault(role, []).append({{'username': username, 'password': {PASSWORD!r},
        'token': token, 'namespace': namespaces[slug], 'tenant': slug}})
admin = User.objects.get(username='admin')
out['portal_admin'] = [{{'username': 'admin',
    'token': issue_api_token(user=admin, name='load', lifetime=None).secret}}]
print(json.dumps(out))
"""
    return json.loads(stack.shell(code))


def lock_holders(stack: Stack) -> dict[str, str | None]:
    import redis

    from mirror.mapping import MIRRORED_KINDS

    try:
        client = redis.Redis.from_url(stack.redis_url, socket_timeout=2)
        prefix = stack.env["WATCHER_LOCK_PREFIX"]
        return {
            kind.value: (v.decode() if (v := client.get(f"{prefix}{kind.value}")) else None)
            for kind in MIRRORED_KINDS
        }
    except redis.RedisError:
        return {}


def mirror_differences(stack: Stack, emulator: Any) -> dict[str, str]:
    from kube.client import Cluster
    from kube.config import ClusterConfig
    from mirror.mapping import MIRRORED_KINDS
    from mirror.store import MODELS

    different = {}
    with Cluster(ClusterConfig(server=emulator.url, read_timeout=60)) as cluster:
        for kind in MIRRORED_KINDS:
            items, _ = cluster.list_all(kind, page_size=2000)
            live = {i["metadata"]["uid"]: i["metadata"]["resourceVersion"] for i in items}
            table = MODELS[kind]._meta.db_table  # a model's table name, not input
            rows = dict(stack.query(f'SELECT uid, resource_version FROM "{table}"'))  # noqa: S608
            if rows != live:
                missing = len(set(live) - set(rows))
                extra = len(set(rows) - set(live))
                stale = sum(1 for uid in set(live) & set(rows) if live[uid] != rows[uid])
                different[kind.value] = f"{missing} missing, {extra} extra, {stale} behind"
    return different


# -- faults --------------------------------------------------------------------------------------


class Faults:
    """Injects the faults at their times and measures how each one ends."""

    def __init__(self, stack: Stack, emulator: Any, postgres: Postgres, broker: Redis) -> None:
        self.stack, self.emulator, self.postgres, self.broker = stack, emulator, postgres, broker
        self.windows: list[tuple[str, float, float]] = []  # announced 503 windows (wall clock)
        self.results: list[tuple[str, str]] = []
        self.errors: list[str] = []

    def ready(self) -> bool:
        return fetch(f"{self.stack.url}/readyz?exclude=mirror,apiserver")[0] == 200

    def requests_in(self, *states: str) -> set[str]:
        try:
            rows = self.stack.query(
                "SELECT id::text FROM claims_claimrequest WHERE state = ANY(%s)", list(states)
            )
        except Exception:  # noqa: BLE001 - the database may be the fault
            return set()
        return {row[0] for row in rows}

    def settled(self, ids: set[str]) -> bool:
        if not ids:
            return True
        rows = self.stack.query(
            "SELECT count(*) FROM claims_claimrequest WHERE id::text = ANY(%s) AND state = ANY(%s)",
            sorted(ids),
            ["submitted", "allocating"],
        )
        return rows[0][0] == 0

    def run(self, name: str) -> None:
        say(f"fault: {name}")
        try:
            getattr(self, f"_{name}")()
        except Exception as error:  # noqa: BLE001 - reported, the run goes on
            self.errors.append(f"{name}: {type(error).__name__}: {error}")
            say(f"fault {name} did not end as expected: {error}")

    def _watcher(self) -> None:
        before = lock_holders(self.stack)
        self.stack.stop("watch-a", signal.SIGKILL)
        killed = time.monotonic()

        def moved() -> bool:
            now = lock_holders(self.stack)
            return bool(now) and all(now[k] and now[k] != before[k] for k in now)

        took = wait_for(moved, 60, "the standby holds every kind")
        self.results.append(("watcher killed: the standby holds every kind after", f"{took:.1f} s"))
        time.sleep(max(0.0, 10 - (time.monotonic() - killed)))
        self.stack.watchers("watch-a")  # restarted by the kubelet: now the standby

    def _allocator(self) -> None:
        """Killed in the middle of applies: the API server takes 3 s over the next creates, so
        the allocator is inside one when the kill comes."""
        from apiemulator.faults import Fault

        self.emulator.add_fault(
            Fault("latency", path=r"/resourceclaims$", method="POST", seconds=3, count=4)
        )
        with contextlib.suppress(AssertionError):  # a quiet moment: killed with none in flight
            wait_for(lambda: bool(self.requests_in("allocating")), 60, "an apply under way")
        flying = self.requests_in("submitted", "allocating")
        self.stack.stop("allocator", signal.SIGKILL)
        killed = time.monotonic()
        time.sleep(5)
        self.stack.worker("allocator", "allocations")  # restarted, as the kubelet would
        wait_for(lambda: self.settled(flying), 180, "the killed allocator's requests")
        self.emulator.clear_faults()
        self.results.append(
            (
                f"allocator killed mid-apply ({len(flying)} requests in flight): all applied "
                "again after (beat resumes them after 30 s)",
                f"{time.monotonic() - killed:.1f} s",
            )
        )

    def _outage(self, name: str, stop: Any, start: Any) -> None:
        began = time.time()
        stop()
        time.sleep(15)
        start()
        back = time.monotonic()
        took = wait_for(self.ready, 120, f"ready after {name}")
        self.windows.append((name, began, time.time() + 2))
        self.results.append((f"{name} away 15 s: ready again after its return", f"{took:.1f} s"))
        del back

    def _postgresql(self) -> None:
        self._outage("PostgreSQL", self.postgres.stop, self.postgres.start)

    def _redis(self) -> None:
        self._outage("Redis", self.broker.stop, self.broker.start)

    def _apiserver(self) -> None:
        self.emulator.go_away()
        away = time.time()
        time.sleep(60)
        during = {
            row[0]
            for row in self.stack.query(
                "SELECT id::text FROM claims_claimrequest WHERE created_at >= to_timestamp(%s)",
                away,
            )
        }
        self.emulator.come_back()
        back = time.monotonic()
        took = wait_for(lambda: self.settled(during), 240, "requests made while it was away")
        self.results.append(
            (
                f"API server away 60 s: the {len(during)} requests made meanwhile decided after "
                "its return",
                f"{took:.1f} s",
            )
        )
        del back


class QuotaWatch(threading.Thread):
    """Samples every tenant's usage (the API's used + in flight against the limit)."""

    def __init__(self, stack: Stack, token: str, tenants: list[str]) -> None:
        super().__init__(daemon=True, name="quota-watch")
        self.stack, self.token, self.tenants = stack, token, tenants
        self.samples = 0
        self.over: list[str] = []
        self.peak: dict[str, float] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(2):
            for tenant in self.tenants:
                status, _, body = fetch(
                    f"{self.stack.url}/api/v1/tenants/{tenant}/usage/",
                    Authorization=f"Bearer {self.token}",
                )
                if status != 200:
                    continue
                self.samples += 1
                for row in json.loads(body)["classes"]:
                    if row["limit"] is None:
                        continue
                    for measure in ("devices", "claims"):
                        limit = row["limit"].get(f"max_{measure}")
                        used = row["used"][measure] + row["in_flight"][measure]
                        key = f"{tenant} {row['device_class']} {measure}"
                        self.peak[key] = max(self.peak.get(key, 0), used)
                        if limit is not None and used > limit:
                            self.over.append(f"{key}: {used} > {limit}")


# -- figures -------------------------------------------------------------------------------------


def figures(
    record: Path, started: float, ended: float, windows: list[tuple[str, float, float]]
) -> dict[str, Any]:
    lines = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
    responses = [line for line in lines if "name" in line]
    submitted = {line["submitted"] for line in lines if "submitted" in line}
    by_name: dict[str, list[float]] = defaultdict(list)
    statuses: dict[str, Counter[int]] = defaultdict(Counter)
    outside, inside = Counter(), Counter()
    for line in responses:
        by_name[line["name"]].append(line["ms"])
        statuses[line["name"]][line["status"]] += 1
        if line["status"] >= 500 or line["status"] == 0:
            announced = any(start <= line["t"] <= end for _, start, end in windows)
            (inside if announced else outside)[(line["name"], line["status"])] += 1
    seconds = max(1.0, ended - started)
    return {
        "requests": len(responses),
        "per_second": len(responses) / seconds,
        "by_name": {
            name: {
                "count": len(times),
                "p50": percentile(times, 0.50),
                "p95": percentile(times, 0.95),
                "p99": percentile(times, 0.99),
                "statuses": dict(sorted(statuses[name].items())),
            }
            for name, times in sorted(by_name.items())
        },
        "statuses": dict(sorted(sum(statuses.values(), Counter()).items())),
        "outside": dict(outside),
        "inside": dict(inside),
        "submitted": submitted,
    }


def markdown(result: dict[str, Any], checks: list[tuple[str, str, bool]], faults: Faults) -> str:
    out = [
        "| request | count | p50 ms | p95 ms | p99 ms | answers |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, row in result["by_name"].items():
        answers = ", ".join(f"{s}: {n}" for s, n in row["statuses"].items())
        out.append(
            f"| {name} | {row['count']:,} | {row['p50']:.0f} | {row['p95']:.0f} | "
            f"{row['p99']:.0f} | {answers} |"
        )
    out += ["", "| fault | figure |", "| --- | --- |"]
    out += [f"| {what} | {value} |" for what, value in faults.results]
    out += ["", "| check | result | |", "| --- | --- | --- |"]
    out += [f"| {what} | {value} | {'ok' if ok else '**FAILED**'} |" for what, value, ok in checks]
    return "\n".join(out) + "\n"


# -- main ----------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 nodes, 3 minutes")
    parser.add_argument("--minutes", type=float, default=None, help="length of the load (10)")
    parser.add_argument("--nodes", type=int, default=None, help="DGX H100 nodes (5,000)")
    parser.add_argument("--claims", type=int, default=None, help="allocated claims (half the GPUs)")
    parser.add_argument("--users", type=int, default=24, help="locust users (24)")
    parser.add_argument("--no-faults", action="store_true", help="the load alone")
    parser.add_argument("--report", metavar="FILE", help="also write the tables as Markdown")
    parser.add_argument("--keep", action="store_true", help="keep the run's folder (logs)")
    args = parser.parse_args()
    minutes = args.minutes or (3.0 if args.quick else 10.0)
    nodes = args.nodes or (500 if args.quick else 5_000)
    claims = args.claims if args.claims is not None else nodes * GPUS_PER_NODE // 2
    locust = shutil.which("locust", path=str(Path(sys.executable).parent)) or shutil.which("locust")
    if locust is None:
        sys.exit('locust is not installed: .venv/bin/pip install -e ".[load]"')
    if reason := missing_redis_server():
        sys.exit(reason)

    import django

    django.setup()
    from apiemulator import Emulator

    folder = Path(tempfile.mkdtemp(prefix="dra-portal-load-"))
    say(f"Machine: {machine()}")
    say(f"Run folder (logs): {folder}")
    postgres = Postgres.create()
    broker = Redis.create(folder / "redis")
    emulator = Emulator(port=0, bookmark_interval=5.0, garbage_collection_interval=None)
    objects = scenario_objects(nodes, claims)
    devices = sum(
        len(o["spec"].get("devices") or []) for o in objects if o["kind"] == "ResourceSlice"
    )
    emulator.load(objects, copy_objects=False)
    del objects
    emulator.start()
    say(
        f"Cluster: {nodes:,} DGX H100 nodes and the demo's ({devices:,} devices), {claims:,} claims"
    )
    stack = Stack(
        postgres.url,
        broker.url,
        emulator.url,
        folder / "portal",
        {"LOG_LEVEL": "WARNING", "LOG_REQUESTS": "false"},
    )
    checks: list[tuple[str, str, bool]] = []
    try:
        stack.prepare()
        accounts = create_accounts(stack)
        stack.web(workers=3)
        started = time.monotonic()
        stack.watchers("watch-a")
        wait_for(lambda: all(lock_holders(stack).values()), 120, "watch-a holds every kind")
        stack.watchers("watch-b")
        stack.worker("allocator", "allocations")
        stack.worker("worker", "default,telemetry", concurrency=2)
        stack.worker("backstop", "backstop")
        stack.beat()

        def cold() -> bool:
            return stack.query("SELECT count(*) FROM devices_device")[0][0] >= devices

        wait_for(cold, 900, "the cold mirror")
        say(f"Cold mirror: {time.monotonic() - started:.1f} s")
        device_paths = [
            f"/devices/{driver}/{pool}/{name}/"
            for driver, pool, name in stack.query(
                "SELECT driver, pool_name, name FROM devices_device ORDER BY random() LIMIT 300"
            )
        ]
        node_names = [
            row[0]
            for row in stack.query("SELECT name FROM devices_node ORDER BY random() LIMIT 300")
        ]
        record = folder / "responses.jsonl"
        config = folder / "load.json"
        config.write_text(
            json.dumps(
                {
                    "record": str(record),
                    "accounts": {k: v for k, v in accounts.items() if k != "portal_admin"},
                    "device_paths": device_paths,
                    "nodes": node_names,
                    "device_pages": max(1, math.ceil(devices / 50)),
                    "node_pages": max(1, math.ceil(nodes / 50)),
                }
            )
        )
        quota = QuotaWatch(stack, accounts["portal_admin"][0]["token"], list(NAMESPACE))
        faults = Faults(stack, emulator, postgres, broker)
        seconds = minutes * 60
        with_faults = "" if args.no_faults else ", with faults"
        say(f"Load: {args.users} users for {minutes:g} min{with_faults}")
        load_started = time.time()
        runner = subprocess.Popen(
            [
                locust,
                "-f",
                str(ROOT / "benchmarks" / "load_scenario.py"),
                "--headless",
                "--users",
                str(args.users),
                "--spawn-rate",
                "4",
                "--run-time",
                f"{int(seconds)}s",
                "--host",
                stack.url,
                "--only-summary",
                "--stop-timeout",
                "120",
                "--loglevel",
                "WARNING",
            ],
            cwd=ROOT,
            env={**os.environ, "LOAD_CONFIG": str(config)},
            stdout=open(folder / "locust.log", "w"),  # noqa: SIM115 - closed with the process
            stderr=subprocess.STDOUT,
        )
        quota.start()
        if not args.no_faults:
            for fraction, name in FAULTS:
                delay = load_started + fraction * seconds - time.time()
                if delay > 0:
                    time.sleep(delay)
                faults.run(name)
        runner.wait(timeout=seconds + 600)
        load_ended = time.time()
        quota.stop.set()
        say("Load over; waiting for every request to settle")

        def settled() -> bool:
            return not stack.query(
                "SELECT 1 FROM claims_claimrequest WHERE state = ANY(%s) LIMIT 1",
                ["submitted", "allocating", "releasing"],
            )

        with contextlib.suppress(AssertionError):  # what is left is reported below
            wait_for(settled, 300, "every request settled")
        result = figures(record, load_started, load_ended, faults.windows)
        rows = dict(stack.query("SELECT id::text, state FROM claims_claimrequest"))
        lost = [r for r in result["submitted"] if r not in rows]
        stuck = [r for r, s in rows.items() if s in ("submitted", "allocating", "releasing")]
        from claims.models import REQUEST_ID_LABEL
        from kube.client import Cluster
        from kube.config import ClusterConfig
        from kube.kinds import Kind

        with Cluster(ClusterConfig(server=emulator.url, read_timeout=60)) as cluster:
            labelled, _ = cluster.list_all(Kind.RESOURCE_CLAIMS, label_selector=REQUEST_ID_LABEL)
        per_request = Counter(c["metadata"]["labels"][REQUEST_ID_LABEL] for c in labelled)
        duplicates = [r for r, n in per_request.items() if n > 1]
        held = {"applied", "in_use"}
        orphans = [r for r in per_request if rows.get(r) not in held]
        unclaimed = [r for r, s in rows.items() if s in held and r not in per_request]
        differences = mirror_differences(stack, emulator)
        outside = sum(result["outside"].values())
        checks = [
            ("requests submitted (201/202)", f"{len(result['submitted']):,}", True),
            ("lost (answered, not in the database)", str(len(lost)), not lost),
            ("left unsettled 5 min after the load", str(len(stuck)), not stuck),
            ("claims per active request > 1", str(len(duplicates)), not duplicates),
            ("claims of ended requests", str(len(orphans)), not orphans),
            ("active requests without a claim", str(len(unclaimed)), not unclaimed),
            (
                f"quota samples above a limit ({quota.samples:,} samples; peaks "
                + ", ".join(f"{k} {v:g}" for k, v in quota.peak.items())
                + ")",
                str(len(quota.over)),
                not quota.over,
            ),
            ("responses >= 500 (or none) outside the 503 windows", str(outside), not outside),
            (
                "responses >= 500 (or none) inside the 503 windows",
                ", ".join(f"{n}×{s} {name}" for (name, s), n in result["inside"].items()) or "0",
                all(s == 503 for _, s in result["inside"]),
            ),
            (
                "mirror equal to the cluster",
                json.dumps(differences) if differences else "yes",
                not differences,
            ),
            (
                "faults that did not end as expected",
                "; ".join(faults.errors) or "0",
                not faults.errors,
            ),
        ]
        print()
        say(
            f"{result['requests']:,} responses in {load_ended - load_started:.0f} s: "
            f"{result['per_second']:.1f}/s sustained; answers {result['statuses']}"
        )
        if result["outside"]:
            say(f"outside the 503 windows: {result['outside']}")
        text = markdown(result, checks, faults)
        print(text)
        if args.report:
            Path(args.report).write_text(
                f"Machine: {machine()}. {nodes:,} nodes, {devices:,} GPUs, {claims:,} claims; "
                f"{args.users} users for {minutes:g} min; {result['requests']:,} responses, "
                f"{result['per_second']:.1f}/s.\n\n" + text
            )
    finally:
        stack.stop_all()
        emulator.stop()
        broker.stop()
        postgres.destroy()
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0 if all(ok for _, _, ok in checks) and checks else 1


if __name__ == "__main__":
    sys.exit(main())
