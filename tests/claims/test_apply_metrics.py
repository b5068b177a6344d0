"""Applying claim requests is measured: submit → applied time by mode, and every attempt's
outcome (applied, failed, the API server unreachable)."""

from __future__ import annotations

import socket

import pytest

from claims.models import ClaimRequest
from tests.prometheus import sample

pytestmark = pytest.mark.django_db

REQUESTS = "/api/v1/claim-requests/"
ONE_H100 = {"namespace": "gpu-test1", "name": "one-h100", "device_class": "gpu.nvidia.com"}
APPLIED = "dra_portal_claim_apply_duration_seconds_count"
OUTCOMES = "dra_portal_claim_apply_total"


def submit(api, django_capture_on_commit_callbacks, **fields):
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(REQUESTS, {**ONE_H100, **fields}, format="json")
    assert response.status_code == 201, response.content
    return ClaimRequest.objects.get(pk=response.json()["id"])


def test_an_applied_request_is_timed_and_counted(
    live, client, api_as, bob, django_capture_on_commit_callbacks
):
    timed = sample(client, APPLIED, mode="scheduler")
    applied = sample(client, OUTCOMES, outcome="applied")
    request = submit(api_as(bob), django_capture_on_commit_callbacks)
    assert request.state == ClaimRequest.State.APPLIED
    assert sample(client, APPLIED, mode="scheduler") == timed + 1
    assert sample(client, OUTCOMES, outcome="applied") == applied + 1


def test_a_failed_apply_is_counted(live, client, api_as, bob, django_capture_on_commit_callbacks):
    emulator, _, _ = live
    failed = sample(client, OUTCOMES, outcome="failed")
    emulator.fail_next(status=422, path="/resourceclaims", method="POST")
    request = submit(api_as(bob), django_capture_on_commit_callbacks)
    assert request.state == ClaimRequest.State.FAILED
    assert sample(client, OUTCOMES, outcome="failed") == failed + 1


def test_an_unreachable_api_server_is_counted(
    live, client, api_as, bob, settings, django_capture_on_commit_callbacks
):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        settings.KUBE_API_SERVER = f"http://127.0.0.1:{sock.getsockname()[1]}"
    unreachable = sample(client, OUTCOMES, outcome="unreachable")
    request = submit(api_as(bob), django_capture_on_commit_callbacks)
    assert request.state == ClaimRequest.State.ALLOCATING  # waits; the resume task retries
    assert sample(client, OUTCOMES, outcome="unreachable") == unreachable + 1
