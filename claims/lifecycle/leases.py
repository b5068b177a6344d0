"""Leases: the longest a request may hold its devices (the one rule: the quota's
``max_lease``), and their end."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from claims.lifecycle.tasks import release_claim_request
from claims.lifecycle.transitions import Move, transition
from claims.models import ClaimRequest
from portal.celery import enqueue_on_commit
from portal.models import Quota

__all__ = ["exceeded_longest", "expire_leases", "longest_lease"]


def longest_lease(quota: Quota | None) -> timedelta | None:
    """The longest lease a request of the quota's class may hold (None: no limit)."""
    return quota.max_lease if quota is not None else None


def exceeded_longest(quota: Quota | None, lease: timedelta | None) -> timedelta | None:
    """The quota's longest lease when ``lease`` is longer than it; None when it is within."""
    longest = longest_lease(quota)
    if lease is None or longest is None or lease <= longest:
        return None
    return longest


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
