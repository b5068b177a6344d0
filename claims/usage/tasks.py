"""Celery tasks of the claims app (thin: they call its services)."""

from __future__ import annotations

from celery import shared_task
from django.core.cache import cache

from claims.usage.idle import sweep_idle_claims
from claims.usage.utilisation import roll_up_usage

__all__ = ["roll_up_claim_usage", "sweep_idle"]

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
