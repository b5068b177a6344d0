"""The lifecycle's periodic tasks (``portal.celery``'s beat schedule names them): leases and
approvals that ran out, requests left behind, idle claims to reclaim."""

from __future__ import annotations

from celery import shared_task

from claims.lifecycle.idle_reclaim import reclaim_idle_claims
from claims.lifecycle.leases import expire_leases
from claims.lifecycle.resume import resume_requests
from claims.lifecycle.tasks import apply_claim_request, release_claim_request
from claims.models import ClaimRequest
from claims.requests.approvals import expire_approvals

__all__ = ["expire_claim_approvals", "expire_claim_leases", "reclaim_idle", "resume_claim_requests"]


@shared_task(name="claims.expire_leases", ignore_result=True)
def expire_claim_leases() -> int:
    """Beat: release requests whose lease ended."""
    return expire_leases()


@shared_task(name="claims.expire_approvals", ignore_result=True)
def expire_claim_approvals() -> int:
    """Beat: requests that waited for approval longer than CLAIMS_APPROVAL_TIMEOUT expire."""
    return expire_approvals()


@shared_task(name="claims.resume_requests", ignore_result=True)
def resume_claim_requests() -> int:
    """Beat: enqueue again requests a dead worker or an outage left behind."""
    stuck = resume_requests()
    for request_id in stuck:
        state = ClaimRequest.objects.filter(pk=request_id).values_list("state", flat=True).first()
        task = (
            release_claim_request if state == ClaimRequest.State.RELEASING else apply_claim_request
        )
        task.delay(request_id)
    return len(stuck)


@shared_task(name="claims.reclaim_idle", ignore_result=True)
def reclaim_idle() -> dict[str, int]:
    """Beat: delete idle claims past their grace period that no pod reserves (tenants whose
    idle policy reclaims; ``claims.lifecycle.idle_reclaim``)."""
    return reclaim_idle_claims()
