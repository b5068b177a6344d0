"""Celery tasks of the claims app (thin: they call its services)."""

from __future__ import annotations

from celery import shared_task

from claims.utilisation import roll_up_usage

__all__ = ["roll_up_claim_usage"]


@shared_task(name="claims.roll_up_usage", ignore_result=True)
def roll_up_claim_usage() -> int:
    """Utilisation per claim, namespace and tenant for the device buckets rolled up since."""
    return roll_up_usage()
