"""Celery tasks of notifications (thin: ids in, a service called; STYLE §14)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from celery import shared_task

from claims.models import ClaimRequest
from notifications.idle_notices import notify_claim_idle, notify_idle_reclaim
from notifications.models import Event
from notifications.services import (
    notify_approval_waiting,
    notify_claim_moved,
    notify_expiring_leases,
    notify_high_quotas,
    notify_renewal_decided,
    notify_request_event,
)

__all__ = [
    "approval_waiting",
    "claim_moved",
    "claims_idle",
    "idle_reclaim",
    "lease_expiring",
    "quota_high",
    "renewal_decided",
    "request_event",
]


@shared_task(name="notifications.request_event", ignore_result=True)
def request_event(request_id: str, event: str, reason: str = "") -> int:
    request = (
        ClaimRequest.objects.select_related("tenant", "requested_by", "decided_by")
        .filter(pk=request_id)
        .first()
    )
    if request is None:
        return 0
    return notify_request_event(request, Event(event), reason)


def _request(request_id: str) -> ClaimRequest | None:
    return (
        ClaimRequest.objects.select_related(
            "tenant", "requested_by", "decided_by", "renewal_requested_by"
        )
        .filter(pk=request_id)
        .first()
    )


@shared_task(name="notifications.approval_waiting", ignore_result=True)
def approval_waiting(request_id: str, renewal: bool = False) -> int:
    """Tell the deciders of a request (or renewal) that waits for approval."""
    request = _request(request_id)
    return 0 if request is None else notify_approval_waiting(request, renewal=renewal)


@shared_task(name="notifications.renewal_decided", ignore_result=True)
def renewal_decided(
    request_id: str,
    approved: bool,
    lease_seconds: int | None = None,
    comment: str = "",
    asked_by_id: Any = None,
) -> int:
    """Tell who asked for a renewal that it was approved or denied."""
    request = _request(request_id)
    if request is None:
        return 0
    return notify_renewal_decided(
        request,
        approved=approved,
        lease=timedelta(seconds=lease_seconds) if lease_seconds is not None else None,
        comment=comment,
        asked_by_id=asked_by_id,
    )


@shared_task(name="notifications.lease_expiring", ignore_result=True)
def lease_expiring() -> int:
    """Beat: tell owners whose lease ends within ``NOTIFY_LEASE_LEAD``."""
    return notify_expiring_leases()


@shared_task(name="notifications.quota_high", ignore_result=True)
def quota_high(tenant_ids: list[Any] | None = None) -> int:
    """Tell tenant admins when usage crosses the quota-high line: for the tenants whose
    mirrored claims changed, and on beat for all."""
    return notify_high_quotas(tenant_ids)


@shared_task(name="notifications.claim_moved", ignore_result=True)
def claim_moved(request_id: str, before: dict[str, Any], after: dict[str, Any]) -> int:
    """Tell an owner that the cluster moved their reservation to other devices."""
    request = (
        ClaimRequest.objects.select_related("tenant", "requested_by").filter(pk=request_id).first()
    )
    if request is None:
        return 0
    return notify_claim_moved(request, before, after)


@shared_task(name="notifications.claims_idle", ignore_result=True)
def claims_idle(claim_ids: list[int]) -> int:
    """Tell idle claims' owners, once per idle episode."""
    return sum(notify_claim_idle(claim_id) for claim_id in claim_ids)


@shared_task(name="notifications.idle_reclaim", ignore_result=True)
def idle_reclaim(
    claim_id: int, namespace: str, name: str, tenant_id: int | None, owner_id: Any, reason: str
) -> int:
    """Tell an owner that their idle claim was reclaimed."""
    return notify_idle_reclaim(
        claim_id=claim_id,
        namespace=namespace,
        name=name,
        tenant_id=tenant_id,
        owner_id=owner_id,
        reason=reason,
    )
