"""Webhook deliveries: signed as documented, retried with backoff against a real loopback
receiver, given up on answers that retrying cannot fix."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from notifications.delivery import retry_webhooks
from notifications.models import Notification, WebhookDelivery
from notifications.tenant_webhooks import send_test_event, set_webhook_url
from notifications.webhooks import MAX_ATTEMPTS, RETRY_DELAYS, attempt_delivery
from tests.notifications.conftest import SECRET

pytestmark = pytest.mark.django_db
State = WebhookDelivery.State


def verify(secret: str, headers: Any, body: bytes) -> bool:
    """What docs/notifications.md tells a receiver to do."""
    timestamp = headers["X-DRA-Portal-Timestamp"]
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return hmac.compare_digest("sha256=" + expected.hexdigest(), headers["X-DRA-Portal-Signature"])


def send_test(team_a, root, django_capture_on_commit_callbacks) -> WebhookDelivery:
    with django_capture_on_commit_callbacks(execute=True):
        delivery = send_test_event(actor=root, tenant=team_a)
    delivery.refresh_from_db()
    return delivery


def test_a_receiver_can_verify_the_signature_of_a_delivery(
    team_a, root, team_a_webhook, django_capture_on_commit_callbacks
):
    delivery = send_test(team_a, root, django_capture_on_commit_callbacks)
    assert delivery.state == State.DELIVERED
    [received] = team_a_webhook.received
    assert verify(SECRET, received.headers, received.body)
    assert not verify("another secret", received.headers, received.body)
    assert received.headers["X-DRA-Portal-Event"] == "test"
    assert received.headers["X-DRA-Portal-Delivery"] == str(delivery.pk)
    assert received.headers["Content-Type"] == "application/json"
    payload = received.payload
    assert payload["event"] == "test"
    assert payload["id"] == str(delivery.pk)
    assert payload["tenant"] == "team-a"
    assert payload["occurred_at"]
    assert payload["data"]["sent_by"] == "root"


def test_a_tampered_body_fails_verification(
    team_a, root, team_a_webhook, django_capture_on_commit_callbacks
):
    send_test(team_a, root, django_capture_on_commit_callbacks)
    [received] = team_a_webhook.received
    tampered = json.dumps({**received.payload, "tenant": "team-b"}).encode()
    assert not verify(SECRET, received.headers, tampered)


def test_a_failed_delivery_is_retried_when_due_and_delivered_on_the_second_attempt(
    team_a, root, team_a_webhook, django_capture_on_commit_callbacks
):
    team_a_webhook.statuses = [500, 200]
    delivery = send_test(team_a, root, django_capture_on_commit_callbacks)
    assert delivery.state == State.PENDING
    assert delivery.attempts == 1
    assert delivery.last_status_code == 500
    assert "HTTP 500" in delivery.last_error
    assert delivery.next_attempt_at - delivery.last_attempt_at == RETRY_DELAYS[0]

    # Not due yet: nothing is sent.
    assert attempt_delivery(delivery.pk) is None
    assert len(team_a_webhook.received) == 1

    attempt_delivery(delivery.pk, now=delivery.next_attempt_at)
    delivery.refresh_from_db()
    assert delivery.state == State.DELIVERED
    assert delivery.attempts == 2
    assert delivery.last_status_code == 200
    assert delivery.delivered_at is not None
    assert delivery.last_error == ""
    first, second = team_a_webhook.received
    # The same delivery id on every attempt, so a receiver can drop repeats.
    assert first.headers["X-DRA-Portal-Delivery"] == second.headers["X-DRA-Portal-Delivery"]
    assert verify(SECRET, second.headers, second.body)


def test_the_retry_sweep_attempts_the_deliveries_that_are_due(
    team_a, root, team_a_webhook, django_capture_on_commit_callbacks
):
    team_a_webhook.statuses = [503, 200]
    delivery = send_test(team_a, root, django_capture_on_commit_callbacks)
    assert retry_webhooks.delay().get() == 0  # not due yet
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    assert retry_webhooks.delay().get() == 1
    delivery.refresh_from_db()
    assert delivery.state == State.DELIVERED
    assert delivery.attempts == 2


@pytest.mark.parametrize("status", [400, 404, 410])
def test_a_client_error_gives_up_at_once(
    status, team_a, root, team_a_webhook, django_capture_on_commit_callbacks
):
    team_a_webhook.statuses = [status]
    delivery = send_test(team_a, root, django_capture_on_commit_callbacks)
    assert delivery.state == State.FAILED
    assert delivery.attempts == 1
    assert delivery.last_status_code == status
    assert delivery.next_attempt_at is None
    assert "Not retried" in delivery.last_error


@pytest.mark.parametrize("status", [408, 429, 502])
def test_timeouts_throttling_and_server_errors_are_retried(
    status, team_a, root, team_a_webhook, django_capture_on_commit_callbacks
):
    team_a_webhook.statuses = [status]
    delivery = send_test(team_a, root, django_capture_on_commit_callbacks)
    assert delivery.state == State.PENDING
    assert delivery.next_attempt_at is not None


def test_it_gives_up_after_the_last_attempt_with_growing_delays(
    team_a, root, team_a_webhook, django_capture_on_commit_callbacks
):
    team_a_webhook.statuses = [500]
    delivery = send_test(team_a, root, django_capture_on_commit_callbacks)
    delays = []
    while delivery.state == State.PENDING:
        delays.append(delivery.next_attempt_at - delivery.last_attempt_at)
        attempt_delivery(delivery.pk, now=delivery.next_attempt_at)
        delivery.refresh_from_db()
    assert delays == list(RETRY_DELAYS)
    assert delivery.state == State.FAILED
    assert delivery.attempts == MAX_ATTEMPTS == len(team_a_webhook.received)
    assert "Gave up after 6 attempts" in delivery.last_error


def test_an_unreachable_receiver_is_recorded_and_retried(
    team_a, root, team_a_webhook, django_capture_on_commit_callbacks
):
    team_a.webhook_url = "http://127.0.0.1:9/closed"
    team_a.save()
    delivery = send_test(team_a, root, django_capture_on_commit_callbacks)
    assert delivery.state == State.PENDING
    assert delivery.last_status_code is None
    assert "Could not connect" in delivery.last_error


@pytest.mark.parametrize(
    "url", ["ftp://hooks.example.com/x", "file:///etc/passwd", "javascript:alert(1)", "hooks"]
)
def test_only_http_and_https_urls_are_accepted(url, team_a, root):
    with pytest.raises(ValidationError):
        set_webhook_url(actor=root, tenant=team_a, url=url)
    team_a.refresh_from_db()
    assert team_a.webhook_url == ""


def test_the_secret_never_appears_in_the_delivery_or_its_notification(
    team_a, root, team_a_webhook, django_capture_on_commit_callbacks
):
    team_a_webhook.statuses = [500]
    delivery = send_test(team_a, root, django_capture_on_commit_callbacks)
    assert SECRET not in json.dumps(delivery.payload)
    assert SECRET not in delivery.last_error
    assert SECRET not in team_a_webhook.received[0].body.decode()
    assert not Notification.objects.filter(body__contains=SECRET).exists()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",  # the portal itself
        "http://169.254.169.254/latest/meta-data/",  # a cloud's metadata service
        "http://10.0.0.5/hook",
        "http://[::1]/hook",
        "http://localhost/hook",
    ],
)
def test_an_internal_destination_is_refused_and_not_retried(
    url, settings, team_a, root, team_a_webhook, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    team_a.webhook_url = url
    team_a.save()
    delivery = send_test(team_a, root, django_capture_on_commit_callbacks)
    assert delivery.state == State.FAILED
    assert delivery.attempts == 1
    assert delivery.next_attempt_at is None
    assert "an internal address" in delivery.last_error and "Not retried" in delivery.last_error
    assert team_a_webhook.received == []
