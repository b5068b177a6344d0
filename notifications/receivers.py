"""Claim request state changes and idle claims → notifications, once the change commits."""

from __future__ import annotations

from typing import Any

from celery import current_app
from django.db import transaction
from django.dispatch import receiver

from claims.models import ClaimRequest
from claims.signals import claim_reclaimed, claims_flagged_idle, request_state_changed
from notifications.services import event_for_transition

__all__ = ["on_claim_reclaimed", "on_claims_flagged_idle", "on_request_state_changed"]

REQUEST_EVENT_TASK = "notifications.request_event"
CLAIMS_IDLE_TASK = "notifications.claims_idle"
IDLE_RECLAIM_TASK = "notifications.idle_reclaim"
IDLE_NOTICE_BATCH = 200


@receiver(request_state_changed, dispatch_uid="notifications.on_request_state_changed")
def on_request_state_changed(
    sender: Any, request: ClaimRequest, before: str, after: str, reason: str = "", **kwargs: Any
) -> None:
    """Sent inside the transition's transaction: enqueue the notice only if it commits."""
    event = event_for_transition(request, before, after, reason)
    if event is None:
        return
    request_id = str(request.pk)
    transaction.on_commit(
        lambda: current_app.tasks[REQUEST_EVENT_TASK].delay(request_id, event.value, reason)
    )


@receiver(claims_flagged_idle, dispatch_uid="notifications.on_claims_flagged_idle")
def on_claims_flagged_idle(sender: Any, claim_ids: list[int], **kwargs: Any) -> None:
    """Tasks for the idle claims whose owners were not told of this episode yet, on commit;
    one per ``IDLE_NOTICE_BATCH`` claims (a sweep may flag thousands at once)."""
    ids = list(claim_ids)

    def enqueue() -> None:
        for start in range(0, len(ids), IDLE_NOTICE_BATCH):
            current_app.tasks[CLAIMS_IDLE_TASK].delay(ids[start : start + IDLE_NOTICE_BATCH])

    transaction.on_commit(enqueue)


@receiver(claim_reclaimed, dispatch_uid="notifications.on_claim_reclaimed")
def on_claim_reclaimed(sender: Any, **kwargs: Any) -> None:
    data = {key: kwargs[key] for key in ("claim_id", "namespace", "name", "tenant_id", "reason")}
    data["owner_id"] = kwargs.get("owner_id")
    transaction.on_commit(lambda: current_app.tasks[IDLE_RECLAIM_TASK].delay(**data))
