"""Celery tasks of the claim lifecycle's cluster half and the mirror's upkeep (thin: they call
``mirror.requests`` and friends). The watchers are not tasks: ``manage.py watch``."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.core.cache import cache

from claims.approvals import expire_approvals
from claims.models import ClaimRequest
from claims.services import expire_leases
from devices.models import InventoryChange
from mirror import requests
from mirror.classes import refresh_device_classes
from mirror.idle_reclaim import reclaim_idle_claims
from mirror.requests import Retry

# Seconds between retries while the API server is unreachable: 2, 4, 8 … up to a minute.
MAX_BACKOFF = 60
# The reservation conflict check runs this long after a reservation is written.
VERIFY_AFTER = 5

__all__ = [
    "apply_claim_request",
    "check_reservations",
    "expire_claim_approvals",
    "expire_claim_leases",
    "reclaim_idle",
    "refresh_device_classes",
    "release_claim_request",
    "resume_claim_requests",
    "sync_claim_requests",
    "verify_claim_reservation",
]


def _retry_later(task: Any, error: Retry) -> None:
    """Retry with backoff on a worker; in the embedded mode (tasks run inline) leave the
    request for the ``resume`` beat task rather than spin."""
    if task.request.is_eager:
        return
    raise task.retry(exc=error, countdown=min(MAX_BACKOFF, 2 ** min(task.request.retries + 1, 6)))


@shared_task(name="claims.apply_request", bind=True, max_retries=None, ignore_result=True)
def apply_claim_request(self: Any, request_id: str) -> str:
    """Apply one request (queue ``allocations``: one consumer decides reservations in turn)."""
    try:
        outcome = requests.apply_request(request_id)
    except Retry as error:
        _retry_later(self, error)
        return "waiting for the API server"
    # One batched check per VERIFY_AFTER seconds covers every reservation applied in them.
    if outcome == "applied" and cache.add("claims:check-reservations", 1, VERIFY_AFTER):
        check_reservations.apply_async(countdown=VERIFY_AFTER)
    return outcome


@shared_task(name="claims.verify_reservation", bind=True, max_retries=5, ignore_result=True)
def verify_claim_reservation(self: Any, request_id: str) -> str:
    try:
        return requests.verify_reservation(request_id)
    except Retry as error:
        _retry_later(self, error)
        return "waiting for the API server"


@shared_task(name="claims.release_request", bind=True, max_retries=None, ignore_result=True)
def release_claim_request(self: Any, request_id: str) -> str:
    try:
        return requests.release_request(request_id)
    except Retry as error:
        _retry_later(self, error)
        return "waiting for the API server"


@shared_task(name="claims.check_reservations", ignore_result=True)
def check_reservations() -> list[str]:
    """One query over the reservations written within the conflict window; those another
    claim also holds a device of are moved (``verify_claim_reservation``)."""
    conflicted = requests.conflicted_reservations()
    for request_id in conflicted:
        verify_claim_reservation.delay(request_id)
    return conflicted


@shared_task(name="claims.expire_leases", ignore_result=True)
def expire_claim_leases() -> int:
    """Beat: release requests whose lease ended."""
    return expire_leases()


@shared_task(name="claims.expire_approvals", ignore_result=True)
def expire_claim_approvals() -> int:
    """Beat: requests that waited for approval longer than CLAIMS_APPROVAL_TIMEOUT expire."""
    return expire_approvals()


@shared_task(name="claims.sync_requests", ignore_result=True)
def sync_claim_requests() -> dict[str, int]:
    """Beat: follow the mirror (in use, deleted outside the portal), re-check recent
    reservations for conflicts, and prune the inventory change log."""
    counts = requests.sync_requests()
    check_reservations.delay()
    InventoryChange.objects.prune()
    return counts


@shared_task(name="claims.resume_requests", ignore_result=True)
def resume_claim_requests() -> int:
    """Beat: enqueue again requests a dead worker or an outage left behind."""
    stuck = requests.resume_requests()
    for request_id in stuck:
        state = ClaimRequest.objects.filter(pk=request_id).values_list("state", flat=True).first()
        task = (
            release_claim_request if state == ClaimRequest.State.RELEASING else apply_claim_request
        )
        task.delay(request_id)
    return len(stuck)


@shared_task(name="claims.reclaim_idle", ignore_result=True)
def reclaim_idle() -> dict[str, int]:
    """Beat: delete idle claims past their grace period that no pod reserves (tenants whose
    idle policy reclaims; ``mirror.idle_reclaim``)."""
    return reclaim_idle_claims()
