"""Celery tasks of the claims app (thin: they call its services)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.core.cache import cache

from claims.models import UsageCounter
from claims.usage.idle import sweep_idle_claims
from claims.usage.utilisation import roll_up_usage

__all__ = ["check_usage_counters", "roll_up_claim_usage", "sweep_idle"]

logger = logging.getLogger(__name__)

# One sweep at a time (two would both flag, and audit, the same claims); the lock expires on
# its own should a worker die holding it.
SWEEP_LOCK = "claims:sweep-idle"
SWEEP_LOCK_SECONDS = 600


@shared_task(name="claims.roll_up_usage", ignore_result=True)
def roll_up_claim_usage() -> int:
    """Utilisation per claim, namespace and tenant for the device buckets rolled up since."""
    return roll_up_usage()


@shared_task(name="claims.sweep_idle", ignore_result=True)
def sweep_idle() -> dict[str, int]:
    """Beat: flag and unflag idle claims (``claims.usage.idle``); owners are told on commit."""
    if not cache.add(SWEEP_LOCK, 1, SWEEP_LOCK_SECONDS):
        return {"skipped": 1}
    try:
        return sweep_idle_claims().as_dict()
    finally:
        cache.delete(SWEEP_LOCK)


@shared_task(name="claims.check_usage_counters", ignore_result=True)
def check_usage_counters() -> int:
    """Beat: the tenants' usage counters against a full count of the results; any difference
    is repaired and logged (it would mean a write path that does not keep them). Returns the
    number of counters that were off."""
    drift = UsageCounter.objects.recount()
    if drift:
        logger.warning(
            "usage counters were off (repaired): %s",
            {f"{tenant}/{name}": tuple(change) for (tenant, name), change in drift.items()},
        )
    return len(drift)
