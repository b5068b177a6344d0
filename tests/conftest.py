"""Shared fixtures: the personas and the real services.

Personas (STYLE §17): alice is tenant admin of team-a, bob her teammate (member), carol a
member of team-b, root a portal admin. team-a owns namespaces ``team-a-dev`` and ``gpu-test1``,
team-b owns ``team-b-prod``.

Services: tests that need PostgreSQL or Redis use the ``postgres`` / ``redis_url`` fixtures,
which skip with a reason when the service is not configured, and fail instead when
``REQUIRE_SERVICES=1`` (CI), so a CI run can never pass by skipping them.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from apiemulator import Emulator
from claims.capacity.index import reset_index
from harness.fixtures import fixture_objects
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.kinds import KINDS, Kind
from mirror.mapping import MIRRORED_KINDS
from mirror.store import delete_missing, load
from portal.models import Membership
from tests.factories import (
    MembershipFactory,
    QuotaFactory,
    TenantFactory,
    TenantNamespaceFactory,
    UserFactory,
)
from tests.unavailable import unavailable

SHARED_FIXTURES = Path(__file__).resolve().parent.parent / "devices" / "fixtures"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture(autouse=True)
def _celery_runs_in_process():
    """Tasks run in the test's process, even when REDIS_URL points Celery at a broker; tests
    of the broker itself talk to it explicitly.

    A test calls tasks as a caller outside any task, whatever ran before it in this process:
    a Celery worker started in a test marks the whole process as one whose results must not
    be waited on (``task_join_will_block``) and can leave it so, and every eager ``.get()``
    after it then raised "Never call result.get() within a task!" (twice in CI)."""
    from celery import _state as celery_state

    from portal.celery import app

    blocked = celery_state.task_join_will_block()
    celery_state._set_task_join_will_block(False)
    # With the CELERY settings namespace the Django-style key is the one Celery reads.
    eager = app.conf.get("CELERY_TASK_ALWAYS_EAGER")
    app.conf["CELERY_TASK_ALWAYS_EAGER"] = True
    yield
    app.conf["CELERY_TASK_ALWAYS_EAGER"] = eager
    celery_state._set_task_join_will_block(blocked)


@pytest.fixture(autouse=True)
def _private_shared_state(settings):
    """Watcher locks and the cache may live in Redis, shared by parallel test workers: each
    test gets its own keys."""
    private = f"test-{uuid.uuid4()}"
    settings.WATCHER_LOCK_PREFIX = f"{private}:"
    settings.CLAIMS_INDEX_FRESH_MS = 0  # tests read the index right after changing things
    settings.CLAIMS_PREVIEW_USAGE_SECONDS = 0
    # Metrics read at scrape time and the readiness probe's API server answer are not kept
    # from one test into the next (tests of that caching set them themselves).
    settings.METRICS_CACHE_SECONDS = 0
    settings.READYZ_CLUSTER_CACHE_SECONDS = 0
    # Personas get passwords in every test: a deliberately slow hash would dominate the suite.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.CACHES = {
        name: {**config, "KEY_PREFIX": private} for name, config in settings.CACHES.items()
    }
    # The telemetry join index and row ids a process keeps between ingest cycles: each test's
    # database starts over (and SQLite reuses ids after a rollback).
    from devices.telemetry.store import forget_cached_state

    forget_cached_state()


@pytest.fixture
def postgres(db: None) -> None:
    """The test runs on PostgreSQL (DATABASE_URL); skipped (or failed in CI) otherwise."""
    if connection.vendor != "postgresql":
        unavailable("PostgreSQL is not configured (set DATABASE_URL=postgres://...)")


@pytest.fixture
def redis_url() -> str:
    """A reachable Redis (REDIS_URL); skipped (or failed in CI) otherwise."""
    url = settings.REDIS_URL
    if not url:
        unavailable("Redis is not configured (set REDIS_URL=redis://...)")
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.RedisError as error:
        unavailable(f"Redis at REDIS_URL is not reachable: {error}")
    return url


@pytest.fixture
def chromium_path() -> str:
    path = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        if os.environ.get("REQUIRE_BROWSER", "") in ("1", "true", "yes"):
            pytest.fail("REQUIRE_BROWSER is set but Debian's chromium is not installed")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    return path


@pytest.fixture(scope="session")
def kubectl_path() -> str:
    """kubectl, for rendering deploy/ with its built-in kustomize (no cluster needed)."""
    path = shutil.which("kubectl")
    if path is None:
        unavailable("kubectl is not installed (it renders deploy/ with kustomize)")
    return str(path)


@pytest.fixture
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def team_a(db):
    tenant = TenantFactory(name="Team A", slug="team-a")
    TenantNamespaceFactory(tenant=tenant, name="team-a-dev")
    TenantNamespaceFactory(tenant=tenant, name="gpu-test1")
    QuotaFactory(tenant=tenant, device_class_name="gpu.nvidia.com", max_devices=8)
    return tenant


@pytest.fixture
def team_b(db):
    tenant = TenantFactory(name="Team B", slug="team-b")
    TenantNamespaceFactory(tenant=tenant, name="team-b-prod")
    QuotaFactory(tenant=tenant, device_class_name="gpu.nvidia.com", max_devices=2)
    return tenant


@pytest.fixture
def alice(team_a):
    user = UserFactory(username="alice", first_name="Alice")
    MembershipFactory(user=user, tenant=team_a, role=Membership.Role.TENANT_ADMIN)
    return user


@pytest.fixture
def bob(team_a):
    user = UserFactory(username="bob", first_name="Bob")
    MembershipFactory(user=user, tenant=team_a, role=Membership.Role.MEMBER)
    return user


@pytest.fixture
def carol(team_b):
    user = UserFactory(username="carol", first_name="Carol")
    MembershipFactory(user=user, tenant=team_b, role=Membership.Role.MEMBER)
    return user


@pytest.fixture
def root(db):
    return UserFactory(username="root", is_staff=True, is_superuser=True)


@pytest.fixture
def personas(alice, bob, carol, root):
    return {"alice": alice, "bob": bob, "carol": carol, "root": root}


def _client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def client_as():
    """``client_as(user)``: a Django test client signed in as ``user``."""
    return _client_for


@pytest.fixture
def api_as():
    """``api_as(user)``: a DRF client authenticated (session) as ``user``."""

    def make(user) -> APIClient:
        client = APIClient()
        client.force_authenticate(user)
        return client

    return make


@pytest.fixture
def mirrored_cluster(db: None) -> None:
    """The mirror holds the demo cluster: 2 DGX H100, a DGX A100 with MIG placements, the
    dra-example-driver node, the legacy node gpu-legacy-01, device classes, claims and pods."""
    from tests.devices.cluster_data import load_fixture_cluster

    load_fixture_cluster()


# -- a live demo cluster (the emulator loaded with the project's fixtures, mirrored) ---------


def _resync(cluster: Cluster) -> None:
    """Mirror everything the API server holds now (what the watchers would converge to)."""
    objects: list[dict[str, Any]] = []
    seen: dict[Kind, set[str]] = {}
    for kind in MIRRORED_KINDS:
        listed, _ = cluster.list_all(kind)
        seen[kind] = {item["metadata"]["uid"] for item in listed}
        objects.extend({**item, "kind": KINDS[kind].kind} for item in listed)
    load(objects)
    for kind, uids in seen.items():
        delete_missing(kind, uids)


@pytest.fixture
def live(db: None, settings: Any) -> Iterator[tuple[Emulator, Cluster, Callable[[], None]]]:
    with Emulator(port=0, bookmark_interval=0.2) as emulator:
        emulator.load(fixture_objects())
        settings.KUBE_API_SERVER = emulator.url
        settings.KUBECONFIG = ""
        reset_index()
        with Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as cluster:
            _resync(cluster)
            yield emulator, cluster, lambda: _resync(cluster)
        reset_index()


@pytest.fixture
def demo_seeded(db: None, settings: Any, tmp_path: Path) -> dict[str, str]:
    """The demo's personas, tenants, quotas and class policies, seeded as ``make demo`` seeds
    them (``manage.py seed_demo``, ``demo.data``); answers the personas' passwords. Use it
    instead of the persona fixtures, with ``live`` for the demo cluster."""
    from django.core.management import call_command

    from demo.data import seed_class_policies

    settings.VAR_DIR = tmp_path
    call_command("seed_demo", stdout=io.StringIO())
    seed_class_policies()
    passwords: dict[str, str] = json.loads((tmp_path / "demo_passwords.json").read_text())
    return passwords
