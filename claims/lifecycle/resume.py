"""Requests a dead worker or an outage left behind, found again for the beat to enqueue."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from claims.models import ClaimRequest

__all__ = ["resume_requests"]

State = ClaimRequest.State


def resume_requests() -> list[str]:
    """Beat: requests left in submitted/allocating/releasing (a worker died, the API server was
    down) longer than ``CLAIMS_RESUME_AFTER_SECONDS``: their ids, to enqueue again."""
    before = timezone.now() - timedelta(seconds=settings.CLAIMS_RESUME_AFTER_SECONDS)
    return [
        str(pk)
        for pk in ClaimRequest.objects.filter(
            state__in=[State.SUBMITTED, State.ALLOCATING, State.RELEASING], updated_at__lt=before
        ).values_list("pk", flat=True)
    ]
