"""A claim request submitted, approved or released while the broker (Redis) is away is
answered normally and not lost: it waits in its state and the ``resume`` beat task enqueues it
once the broker is back."""

from __future__ import annotations

import socket
from datetime import timedelta

import pytest

from claims.lifecycle.beat import resume_claim_requests
from claims.models import ClaimRequest
from portal.celery import app
from tests.claims.conftest import make_pending, policy

pytestmark = pytest.mark.django_db

REQUESTS = "/api/v1/claim-requests/"
ONE_H100 = {"namespace": "gpu-test1", "name": "one-h100", "device_class": "gpu.nvidia.com"}


@pytest.fixture
def broker():
    """``away()`` points Celery at a closed port and sends tasks to it (as on a worker
    deployment); ``back()`` runs them in-process again."""

    def set_broker(url: str, eager: bool) -> None:
        app.close()  # drop pooled broker connections
        app.conf["CELERY_BROKER_URL"] = url
        app.conf["CELERY_TASK_ALWAYS_EAGER"] = eager

    saved = app.conf["CELERY_BROKER_URL"]

    class Broker:
        def away(self) -> None:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            set_broker(f"redis://127.0.0.1:{port}/0", eager=False)

        def back(self) -> None:
            set_broker(saved, eager=True)

    yield Broker()
    set_broker(saved, eager=True)


def stuck_for_a_while() -> None:
    """The ``resume`` task takes requests untouched for 30 s."""
    ClaimRequest.objects.update(updated_at=ClaimRequest.objects.get().updated_at - timedelta(60))


def test_a_request_submitted_while_the_broker_is_away_is_applied_once_it_is_back(
    live, api_as, bob, broker, django_capture_on_commit_callbacks
):
    broker.away()
    with django_capture_on_commit_callbacks(execute=True) as sent:
        response = api_as(bob).post(REQUESTS, ONE_H100, format="json")
    assert sent  # the enqueue was tried, and failed
    assert response.status_code == 201, response.content
    request = ClaimRequest.objects.get()
    assert request.state == ClaimRequest.State.SUBMITTED

    broker.back()
    assert resume_claim_requests() == 0  # not yet stuck: a worker may still have it
    stuck_for_a_while()
    assert resume_claim_requests() == 1
    request.refresh_from_db()
    assert request.state == ClaimRequest.State.APPLIED


def test_an_approval_while_the_broker_is_away_is_applied_once_it_is_back(
    live, api_as, alice, bob, team_a, broker, django_capture_on_commit_callbacks
):
    policy(team_a, approve_above_devices=1)
    pending = make_pending(bob, team_a, devices=1)
    broker.away()
    with django_capture_on_commit_callbacks(execute=True):
        response = api_as(alice).post(f"{REQUESTS}{pending.pk}/approve/", {}, format="json")
    assert response.status_code == 200, response.content
    pending.refresh_from_db()
    assert pending.state == ClaimRequest.State.SUBMITTED

    broker.back()
    stuck_for_a_while()
    assert resume_claim_requests() == 1
    pending.refresh_from_db()
    assert pending.state == ClaimRequest.State.APPLIED


def test_a_release_while_the_broker_is_away_ends_once_it_is_back(
    live, api_as, bob, broker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        created = api_as(bob).post(REQUESTS, ONE_H100, format="json").json()
    assert ClaimRequest.objects.get().state == ClaimRequest.State.APPLIED
    broker.away()
    with django_capture_on_commit_callbacks(execute=True):
        response = api_as(bob).post(f"{created['url']}release/", {}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["state"] == "releasing"

    broker.back()
    stuck_for_a_while()
    assert resume_claim_requests() == 1
    assert ClaimRequest.objects.get().state == ClaimRequest.State.RELEASED
