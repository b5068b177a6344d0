"""``/readyz``: the database, Redis, each mirrored kind fresh and the API server, each with a
reason; 200 or 503; anonymous, and naming no secret."""

from __future__ import annotations

import socket
from datetime import timedelta

import pytest
from django.utils import timezone

from apiemulator import Emulator
from mirror.mapping import MIRRORED_KINDS
from mirror.models import MirrorStatus


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def mirror_heard_from(seconds_ago: float = 1, **exceptions: float) -> None:
    now = timezone.now()
    for kind in MIRRORED_KINDS:
        ago = exceptions.get(kind.value, seconds_ago)
        MirrorStatus.objects.update_or_create(
            kind=kind.value,
            defaults={
                "state": MirrorStatus.State.WATCHING,
                "last_seen_at": now - timedelta(seconds=ago),
            },
        )


@pytest.fixture
def emulator(settings):
    with Emulator(port=0) as emulator:
        settings.KUBE_API_SERVER = emulator.url
        settings.KUBECONFIG = ""
        yield emulator


@pytest.mark.django_db
def test_it_is_ready_when_every_check_passes(client, emulator):
    mirror_heard_from()
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ok"
    assert list(body["checks"]) == ["database", "redis", "mirror", "apiserver"]
    assert all(check["ok"] for check in body["checks"].values())
    assert body["checks"]["apiserver"]["version"].startswith("v1.")
    assert body["checks"]["mirror"]["kinds"]["resourceslices"]["freshness"] == "fresh"


@pytest.mark.django_db
def test_a_stale_kind_makes_it_unready_and_is_named(client, emulator, settings):
    settings.MIRROR_STALE_SECONDS = 90
    mirror_heard_from(resourceslices=200)
    MirrorStatus.objects.filter(kind="pods").delete()
    response = client.get("/readyz")
    assert response.status_code == 503
    mirror = response.json()["checks"]["mirror"]
    assert mirror["ok"] is False
    assert mirror["reason"] == (
        "resourceslices silent for 200 s, pods never synced (stale after 90 s)"
    )
    assert mirror["kinds"]["resourceslices"]["freshness"] == "very_stale"
    assert mirror["kinds"]["nodes"]["ok"] is True


@pytest.mark.django_db
def test_the_mirror_uses_the_mirror_pages_rule(client, emulator, settings, client_as, root):
    """Stale on /readyz exactly when the Mirror page says so."""
    settings.MIRROR_STALE_SECONDS = 90
    mirror_heard_from(nodes=100)
    page = client_as(root).get("/mirror/")
    stale_on_page = {status.kind for status in page.context["stale"]}
    kinds = client.get("/readyz").json()["checks"]["mirror"]["kinds"]
    assert stale_on_page == {kind for kind, check in kinds.items() if not check["ok"]} == {"nodes"}


@pytest.mark.django_db
def test_an_unreachable_api_server_makes_it_unready(client, settings):
    mirror_heard_from()
    settings.KUBE_API_SERVER = f"http://127.0.0.1:{closed_port()}"
    response = client.get("/readyz")
    assert response.status_code == 503
    check = response.json()["checks"]["apiserver"]
    assert check["ok"] is False
    assert check["reason"].startswith("Unreachable")


@pytest.mark.django_db
def test_the_api_servers_answer_is_kept_for_a_few_seconds(client, emulator, settings):
    mirror_heard_from()
    settings.READYZ_CLUSTER_CACHE_SECONDS = 60
    assert client.get("/readyz").status_code == 200
    emulator.fail_next(5, status=500, path="^/version")
    assert client.get("/readyz").status_code == 200  # the kept answer: /version not asked
    assert len(emulator.faults()) == 1
    settings.READYZ_CLUSTER_CACHE_SECONDS = 0
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["apiserver"]["ok"] is False


@pytest.mark.django_db
def test_an_unreachable_redis_is_named_without_its_password(client, emulator, settings):
    mirror_heard_from()
    settings.REDIS_URL = f"redis://:hunter2-secret@127.0.0.1:{closed_port()}/0"
    response = client.get("/readyz")
    assert response.status_code == 503
    redis = response.json()["checks"]["redis"]
    assert redis["ok"] is False
    assert redis["reason"].startswith("ConnectionError")
    assert b"hunter2" not in response.content


@pytest.mark.django_db
def test_excluded_checks_are_not_run_and_do_not_count(client, settings):
    """The web's readiness probe leaves out what no web pod can fix (the watchers, the API
    server): a stale mirror must not take every web pod out of its Service."""
    settings.KUBE_API_SERVER = f"http://127.0.0.1:{closed_port()}"
    response = client.get("/readyz?exclude=mirror&exclude=apiserver")
    assert response.status_code == 200
    checks = response.json()["checks"]
    assert checks["mirror"] == {"excluded": True}
    assert checks["apiserver"] == {"excluded": True}
    assert client.get("/readyz?exclude=mirror,apiserver").status_code == 200


@pytest.mark.django_db
def test_an_unknown_check_is_a_clear_error(client):
    response = client.get("/readyz?exclude=etcd")
    assert response.status_code == 400
    assert response.json() == {
        "error": "Unknown check etcd: the checks are database, redis, mirror, apiserver."
    }
