"""Claim request state changes → notifications, once the change commits."""

from __future__ import annotations

from typing import Any

from celery import current_app
from django.db import transaction
from django.dispatch import receiver

from claims.models import ClaimRequest
from claims.signals import request_state_changed
from notifications.services import event_for_transition

__all__ = ["on_request_state_changed"]

REQUEST_EVENT_TASK = "notifications.request_event"


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
