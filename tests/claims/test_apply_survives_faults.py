"""Claim requests through real processes (gunicorn, the watchers, the allocator and lifecycle
Celery workers on a Redis of their own, PostgreSQL, the API emulator) survive the faults of a
production cluster: the allocator killed in the middle of an apply (SIGKILL, its pool with it)
and the API server away. Nothing is lost, nothing is applied twice, and the mirror ends equal
to the cluster. About 60 s: marked slow. The same faults at their production timings (60 s
away, beat's own schedule) run in ``benchmarks/load.py``.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator

import pytest

from apiemulator import Emulator
from apiemulator.faults import Fault
from claims.models import REQUEST_ID_LABEL
from harness.fixtures import fixture_objects
from harness.stack import Stack, fetch, missing_redis_server, on_loopback, signed_in, wait_for
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.kinds import Kind
from mirror.mapping import MIRRORED_KINDS
from mirror.store import MODELS
from tests.unavailable import unavailable

pytestmark = pytest.mark.slow

# Beat's resume task picks up a request its dead worker left after this long (30 s in
# production), sent here by the test as beat would send it.
RESUME_AFTER = 2
AWAY_SECONDS = 8


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[tuple[Stack, Emulator]]:
    if reason := missing_redis_server():
        unavailable(reason)
    var = tmp_path_factory.mktemp("faults")
    settings = {"CLAIMS_RESUME_AFTER_SECONDS": str(RESUME_AFTER)}
    with on_loopback(var, fixture_objects(), **settings) as (stack, emulator):
        stack.prepare()
        # Room for every request of this module in team-a's quota.
        stack.shell(
            "from portal.models import Tenant\n"
            "from portal.services.tenants import save_quota\n"
            "save_quota(actor=None, tenant=Tenant.objects.get(slug='team-a'),\n"
            "    device_class_name='gpu.nvidia.com', max_devices=20, max_claims=20,\n"
            "    approve_above_devices=4)"
        )
        stack.web(workers=2)
        stack.watchers("watchers")
        stack.wait_until_mirrored()
        stack.worker("allocator", "allocations")
        stack.worker("worker", "default", concurrency=2)
        yield stack, emulator


def submit(stack: Stack, name: str) -> str:
    status, body = stack.api(
        "POST",
        "claim-requests/",
        {"namespace": "gpu-test1", "name": name, "device_class": "gpu.nvidia.com", "lease": "2h"},
        **{"Idempotency-Key": f"faults-{name}"},
    )
    assert status == 201, body
    return str(body["id"])


def state_of(stack: Stack, request_id: str) -> str:
    status, body = stack.api("GET", f"claim-requests/{request_id}/")
    return body["state"] if status == 200 else f"HTTP {status}"


def claims_of(emulator: Emulator, request_id: str) -> list[dict]:
    with Cluster(ClusterConfig(server=emulator.url)) as cluster:
        return cluster.list_page(
            Kind.RESOURCE_CLAIMS, label_selector=f"{REQUEST_ID_LABEL}={request_id}"
        )["items"]


def resume(stack: Stack) -> None:
    """What beat sends every 30 s: enqueue the requests a dead worker left behind."""
    stack.shell(
        "from claims.lifecycle.beat import resume_claim_requests\nresume_claim_requests.delay()"
    )


def mirror_exact(stack: Stack, emulator: Emulator) -> bool:
    with Cluster(ClusterConfig(server=emulator.url)) as cluster:
        for kind in MIRRORED_KINDS:
            items = cluster.list_all(kind)[0]
            live = {i["metadata"]["uid"]: i["metadata"]["resourceVersion"] for i in items}
            table = MODELS[kind]._meta.db_table  # a model's table name, not input
            rows = dict(stack.query(f'SELECT uid, resource_version FROM "{table}"'))  # noqa: S608
            if rows != live:
                return False
    return True


@pytest.mark.parametrize(
    ("moment", "fault"),
    [
        # The claim is created, the worker dies while it writes the reservation's status.
        ("writing the status", Fault("latency", path=r"/resourceclaims/[^/]+/status$", seconds=6)),
        # The worker dies while the API server takes the create (and then makes the claim).
        (
            "creating the claim",
            Fault("latency", path=r"/resourceclaims$", method="POST", seconds=6),
        ),  # noqa: E501
    ],
)
def test_an_allocator_killed_mid_apply_loses_nothing_and_applies_once(stack, moment, fault):
    stack, emulator = stack
    name = f"killed-{moment.split()[0]}"
    emulator.add_fault(fault)
    request_id = submit(stack, name)
    wait_for(lambda: state_of(stack, request_id) == "allocating", 30, "the apply under way")
    time.sleep(1)  # inside the slow call
    stack.stop("allocator", signal.SIGKILL)
    assert state_of(stack, request_id) == "allocating"

    stack.worker("allocator", "allocations")
    time.sleep(RESUME_AFTER + 0.5)
    resume(stack)
    wait_for(lambda: state_of(stack, request_id) == "applied", 60, f"{name} applied")
    emulator.clear_faults()

    (claim,) = claims_of(emulator, request_id)  # exactly one claim, whatever was created when
    status, body = stack.api("GET", f"claim-requests/{request_id}/")
    assert claim["status"]["allocation"] == body["allocation"]
    # The mirror shows the claim and its devices once the watcher has the status write.
    wait_for(
        lambda: stack.api("GET", f"claim-requests/{request_id}/")[1]["devices"], 15, "mirrored"
    )


def test_requests_submitted_and_released_while_the_api_server_is_away_complete_after(stack):
    stack, emulator = stack
    before = submit(stack, "away-before")
    wait_for(lambda: state_of(stack, before) == "applied", 60, "applied before the outage")

    emulator.go_away()
    down = time.monotonic()
    try:
        during = [submit(stack, f"away-during-{n}") for n in range(3)]
        status, body = stack.api("POST", f"claim-requests/{before}/release/", {})
        assert status == 200, body
        # The portal answers from its mirror meanwhile, and says the API server is away.
        assert fetch(f"{stack.url}/devices/", signed_in(stack.url))[0] == 200
        _, _, ready = fetch(f"{stack.url}/readyz")
        assert json.loads(ready)["checks"]["apiserver"]["ok"] is False
        time.sleep(max(0.0, AWAY_SECONDS - (time.monotonic() - down)))
        assert {state_of(stack, r) for r in during} <= {"submitted", "allocating"}
        assert state_of(stack, before) == "releasing"
    finally:
        emulator.come_back()
    back = time.monotonic()

    for request_id in during:
        wait_for(lambda r=request_id: state_of(stack, r) == "applied", 90, f"{request_id} applied")
    wait_for(lambda: state_of(stack, before) == "released", 90, "the release done")
    took = time.monotonic() - back
    print(f"after {AWAY_SECONDS} s away: every request done {took:.1f} s after the return")
    for request_id in during:
        assert len(claims_of(emulator, request_id)) == 1
    assert claims_of(emulator, before) == []
    wait_for(lambda: mirror_exact(stack, emulator), 60, "the mirror exact after the return")
