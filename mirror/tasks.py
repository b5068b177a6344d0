"""Celery tasks of the mirror's upkeep (thin). The watchers are not tasks: ``manage.py watch``."""

from __future__ import annotations

from celery import shared_task

from claims.lifecycle.tasks import check_reservations
from devices.models import InventoryChange
from mirror.classes import refresh_device_classes
from mirror.following import sync_requests

__all__ = ["refresh_device_classes", "sync_claim_requests"]


@shared_task(name="claims.sync_requests", ignore_result=True)
def sync_claim_requests() -> dict[str, int]:
    """Beat: follow the mirror (in use, deleted outside the portal), re-check recent
    reservations for conflicts, and prune the inventory change log."""
    counts = sync_requests()
    check_reservations.delay()
    InventoryChange.objects.prune()
    return counts
