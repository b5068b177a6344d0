"""Celery tasks of the request lifecycle's cluster half (thin: they call ``apply``, ``release``
and ``conflicts``). Queued by object (``portal.celery.enqueue_on_commit``), never by name."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.core.cache import cache

from claims.lifecycle import apply, conflicts, release
from claims.lifecycle.apply import Retry

__all__ = [
    "apply_claim_request",
    "check_reservations",
    "release_claim_request",
    "retry_later",
    "verify_claim_reservation",
]

# Seconds between retries while the API server is unreachable: 2, 4, 8 … up to a minute.
MAX_BACKOFF = 60
# The reservation conflict check runs this long after a reservation is written.
VERIFY_AFTER = 5


def retry_later(task: Any, error: Retry) -> None:
    """Retry with backoff on a worker; in the embedded mode (tasks run inline) leave the
    request for the ``resume`` beat task rather than spin."""
    if task.request.is_eager:
        return
    raise task.retry(exc=error, countdown=min(MAX_BACKOFF, 2 ** min(task.request.retries + 1, 6)))


@shared_task(name="claims.apply_request", bind=True, max_retries=None, ignore_result=True)
def apply_claim_request(self: Any, request_id: str) -> str:
    """Apply one request (queue ``allocations``: one consumer decides reservations in turn)."""
    try:
        outcome = apply.apply_request(request_id)
    except Retry as error:
        retry_later(self, error)
        return "waiting for the API server"
    # One batched check per VERIFY_AFTER seconds covers every reservation applied in them.
    if outcome == "applied" and cache.add("claims:check-reservations", 1, VERIFY_AFTER):
        check_reservations.apply_async(countdown=VERIFY_AFTER)
    return outcome


@shared_task(name="claims.verify_reservation", bind=True, max_retries=5, ignore_result=True)
def verify_claim_reservation(self: Any, request_id: str) -> str:
    try:
        return conflicts.verify_reservation(request_id)
    except Retry as error:
        retry_later(self, error)
        return "waiting for the API server"


@shared_task(name="claims.release_request", bind=True, max_retries=None, ignore_result=True)
def release_claim_request(self: Any, request_id: str) -> str:
    try:
        return release.release_request(request_id)
    except Retry as error:
        retry_later(self, error)
        return "waiting for the API server"


@shared_task(name="claims.check_reservations", ignore_result=True)
def check_reservations() -> list[str]:
    """One query over the reservations written within the conflict window; those another
    claim also holds a device of are moved (``verify_claim_reservation``)."""
    conflicted = conflicts.conflicted_reservations()
    for request_id in conflicted:
        verify_claim_reservation.delay(request_id)
    return conflicted
