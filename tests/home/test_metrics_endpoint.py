"""``/metrics``: the portal's own metrics, to the allowed networks or with the token."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from claims.models import ClaimRequest
from mirror.models import MirrorStatus
from tests.prometheus import scrape


def value(samples, name: str, **labels: str) -> float | None:
    for sample in samples:
        if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
            return sample.value
    return None


@pytest.mark.django_db
def test_it_is_served_to_loopback_by_default(client):
    families = scrape(client)  # the test client's REMOTE_ADDR is 127.0.0.1
    for name in (
        "dra_portal_http_request_duration_seconds",
        "dra_portal_mirror_batch_duration_seconds",
        "dra_portal_claim_apply_duration_seconds",
        "dra_portal_claim_apply",
        "dra_portal_telemetry_cycle_duration_seconds",
        "dra_portal_mirror_seconds_since_seen",
        "dra_portal_mirror_stale",
        "dra_portal_mirror_events",
        "dra_portal_claim_requests",
        "dra_portal_celery_queue_length",
        "dra_portal_ready",
        "dra_portal_scrape_collector_up",
    ):
        assert name in families, name


@pytest.mark.django_db
def test_other_addresses_need_an_allowed_network_or_the_token(client, settings):
    settings.METRICS_TOKEN = "scrape-token-0123456789"
    elsewhere = {"REMOTE_ADDR": "10.1.2.3"}
    refused = client.get("/metrics", **elsewhere)
    assert refused.status_code == 403
    assert b"METRICS_ALLOWED_NETWORKS" in refused.content
    wrong = client.get("/metrics", HTTP_AUTHORIZATION="Bearer not-the-token", **elsewhere)
    assert wrong.status_code == 403
    assert scrape(client, HTTP_AUTHORIZATION="Bearer scrape-token-0123456789", **elsewhere)
    settings.METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    assert scrape(client, **elsewhere)
    assert client.get("/metrics", REMOTE_ADDR="192.168.1.5").status_code == 403


@pytest.mark.django_db
def test_it_measures_requests_by_view_method_and_status_class(client, alice):
    before = scrape(client)["dra_portal_http_request_duration_seconds"]
    labels = {"view": "login", "method": "GET", "status": "2xx"}
    count = value(before, "dra_portal_http_request_duration_seconds_count", **labels) or 0
    client.get("/login/")
    client.get("/login/")
    client.get("/no-such-page/")
    after = scrape(client)["dra_portal_http_request_duration_seconds"]
    assert value(after, "dra_portal_http_request_duration_seconds_count", **labels) == count + 2
    assert value(
        after, "dra_portal_http_request_duration_seconds_count", view="unmatched", status="4xx"
    )


@pytest.mark.django_db
def test_it_counts_claim_requests_by_state(client, team_a, alice):
    for state in ("applied", "applied", "failed"):
        ClaimRequest.objects.create(
            tenant=team_a,
            namespace="team-a-dev",
            name=f"claim-{ClaimRequest.objects.count()}",
            device_class_name="gpu.nvidia.com",
            mode="scheduler",
            spec={"devices": {"requests": []}},
            state=state,
            requested_by=alice,
        )
    samples = scrape(client)["dra_portal_claim_requests"]
    assert value(samples, "dra_portal_claim_requests", state="applied") == 2
    assert value(samples, "dra_portal_claim_requests", state="failed") == 1
    assert value(samples, "dra_portal_claim_requests", state="pending_approval") == 0


@pytest.mark.django_db
def test_it_reads_the_mirrors_lag_and_events_per_kind(client, settings):
    settings.MIRROR_STALE_SECONDS = 90
    now = timezone.now()
    MirrorStatus.objects.create(kind="nodes", last_seen_at=now, events_total=42, lag_seconds=0.2)
    MirrorStatus.objects.create(kind="resourceslices", last_seen_at=now - timedelta(seconds=300))
    families = scrape(client)
    assert (
        value(families["dra_portal_mirror_events"], "dra_portal_mirror_events_total", kind="nodes")
        == 42
    )
    assert value(families["dra_portal_mirror_stale"], "dra_portal_mirror_stale", kind="nodes") == 0
    assert (
        value(families["dra_portal_mirror_stale"], "dra_portal_mirror_stale", kind="resourceslices")
        == 1
    )
    assert value(families["dra_portal_mirror_stale"], "dra_portal_mirror_stale", kind="pods") == 1
    since = value(
        families["dra_portal_mirror_seconds_since_seen"],
        "dra_portal_mirror_seconds_since_seen",
        kind="resourceslices",
    )
    assert 300 <= since < 400
    assert value(families["dra_portal_ready"], "dra_portal_ready", check="mirror") == 0
    assert value(families["dra_portal_ready"], "dra_portal_ready", check="database") == 1


@pytest.mark.django_db
def test_database_reads_are_kept_between_scrapes(client, settings, team_a, alice):
    settings.METRICS_CACHE_SECONDS = 60
    scrape(client)
    ClaimRequest.objects.create(
        tenant=team_a,
        namespace="team-a-dev",
        name="late",
        device_class_name="gpu.nvidia.com",
        mode="scheduler",
        spec={"devices": {"requests": []}},
        state="applied",
        requested_by=alice,
    )
    samples = scrape(client)["dra_portal_claim_requests"]
    assert value(samples, "dra_portal_claim_requests", state="applied") == 0
    settings.METRICS_CACHE_SECONDS = 0
    samples = scrape(client)["dra_portal_claim_requests"]
    assert value(samples, "dra_portal_claim_requests", state="applied") == 1


def test_it_reads_the_depth_of_each_celery_queue_from_redis(client, db, redis_url, settings):
    import redis

    settings.CELERY_BROKER_URL = redis_url
    connection = redis.Redis.from_url(redis_url)
    base = connection.llen("allocations")
    connection.rpush("allocations", b"one", b"two")
    connection.rpush("allocations\x06\x163", b"three")
    try:
        samples = scrape(client)["dra_portal_celery_queue_length"]
    finally:
        connection.lrem("allocations", 1, b"one")
        connection.lrem("allocations", 1, b"two")
        connection.lrem("allocations\x06\x163", 1, b"three")
    assert value(samples, "dra_portal_celery_queue_length", queue="allocations") == base + 3
    assert value(samples, "dra_portal_celery_queue_length", queue="default") is not None
