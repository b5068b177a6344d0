"""Leases: the longest a request may hold its devices, and their end."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from claims.lifecycle.tasks import release_claim_request
from claims.lifecycle.transitions import Move, transition
from claims.models import ClaimRequest
from portal.celery import enqueue_on_commit

__all__ = ["expire_leases"]


def expire_leases(now: Any = None) -> int:
    """Beat: requests whose lease ended are released (their claims deleted)."""
    now = now or timezone.now()
    expired = 0
    for request in (
        ClaimRequest.objects.active()
        .filter(expires_at__lte=now)
        .exclude(state=ClaimRequest.State.RELEASING)
    ):
        if transition(request, Move.RELEASE, reason="lease ended", lease_ended=True):
            enqueue_on_commit(release_claim_request, str(request.pk))
            expired += 1
    return expired
