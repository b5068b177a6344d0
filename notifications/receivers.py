"""Claim request state changes and idle claims → notifications, once the change commits."""

from __future__ import annotations

from typing import Any

from celery import current_app
from django.core.cache import cache
from django.db import transaction
from django.dispatch import receiver

from claims.models import ClaimRequest
from claims.signals import (
    approval_requested,
    claim_moved,
    claim_reclaimed,
    claims_flagged_idle,
    renewal_decided,
    request_state_changed,
    tenant_usage_changed,
)
from notifications import tasks
from notifications.services import event_for_transition
from portal.celery import enqueue_on_commit

__all__ = [
    "on_approval_requested",
    "on_claim_moved",
    "on_claim_reclaimed",
    "on_claims_flagged_idle",
    "on_renewal_decided",
    "on_request_state_changed",
    "on_tenant_usage_changed",
]

IDLE_NOTICE_BATCH = 200
# On a worker, a tenant's quota-high check runs this long after its claims changed; changes
# within the first ``QUOTA_CHECK_COALESCE`` seconds share that check (it reads the latest usage).
QUOTA_CHECK_AFTER = 2.0
QUOTA_CHECK_COALESCE = 1.5


@receiver(request_state_changed, dispatch_uid="notifications.on_request_state_changed")
def on_request_state_changed(
    sender: Any, request: ClaimRequest, before: str, after: str, reason: str = "", **kwargs: Any
) -> None:
    """Sent inside the transition's transaction: enqueue the notice only if it commits."""
    event = event_for_transition(request, before, after, reason)
    if event is None:
        return
    enqueue_on_commit(tasks.request_event, str(request.pk), event.value, reason)


@receiver(claims_flagged_idle, dispatch_uid="notifications.on_claims_flagged_idle")
def on_claims_flagged_idle(sender: Any, claim_ids: list[int], **kwargs: Any) -> None:
    """Tasks for the idle claims whose owners were not told of this episode yet, on commit;
    one per ``IDLE_NOTICE_BATCH`` claims (a sweep may flag thousands at once)."""
    ids = list(claim_ids)
    for start in range(0, len(ids), IDLE_NOTICE_BATCH):
        enqueue_on_commit(tasks.claims_idle, ids[start : start + IDLE_NOTICE_BATCH])


@receiver(claim_reclaimed, dispatch_uid="notifications.on_claim_reclaimed")
def on_claim_reclaimed(sender: Any, **kwargs: Any) -> None:
    data = {key: kwargs[key] for key in ("claim_id", "namespace", "name", "tenant_id", "reason")}
    data["owner_id"] = kwargs.get("owner_id")
    enqueue_on_commit(tasks.idle_reclaim, kwargs=data)


@receiver(claim_moved, dispatch_uid="notifications.on_claim_moved")
def on_claim_moved(
    sender: Any, request: ClaimRequest, before: dict[str, Any], after: dict[str, Any], **kwargs: Any
) -> None:
    enqueue_on_commit(tasks.claim_moved, str(request.pk), before, after)


@receiver(tenant_usage_changed, dispatch_uid="notifications.on_tenant_usage_changed")
def on_tenant_usage_changed(sender: Any, tenant_ids: list[Any] | None, **kwargs: Any) -> None:
    """The quota-high alarm of those tenants is evaluated again, on commit: at once in the
    embedded mode (tasks run inline), else shortly after, one check per tenant for a burst of
    changes."""
    task = tasks.quota_high

    def check() -> None:
        if current_app.conf.task_always_eager:
            task.delay(tenant_ids)
            return
        due = [
            tenant_id
            for tenant_id in (tenant_ids if tenant_ids is not None else ["all"])
            if cache.add(f"notifications:quota-high:{tenant_id}", 1, QUOTA_CHECK_COALESCE)
        ]
        if due:
            task.apply_async((None if tenant_ids is None else due,), countdown=QUOTA_CHECK_AFTER)

    transaction.on_commit(check)


@receiver(approval_requested, dispatch_uid="notifications.on_approval_requested")
def on_approval_requested(
    sender: Any, request: ClaimRequest, renewal: bool = False, **kwargs: Any
) -> None:
    """A request (or a renewal) waits: its deciders are told once the recording commits."""
    enqueue_on_commit(tasks.approval_waiting, str(request.pk), renewal)


@receiver(renewal_decided, dispatch_uid="notifications.on_renewal_decided")
def on_renewal_decided(
    sender: Any,
    request: ClaimRequest,
    approved: bool,
    lease: Any = None,
    comment: str = "",
    asked_by: Any = None,
    **kwargs: Any,
) -> None:
    """A renewal was approved or denied: who asked for it is told, on commit."""
    data = {
        "request_id": str(request.pk),
        "approved": approved,
        "lease_seconds": int(lease.total_seconds()) if lease else None,
        "comment": comment,
        "asked_by_id": asked_by.pk if asked_by is not None else None,
    }
    enqueue_on_commit(tasks.renewal_decided, kwargs=data)
