"""Approvals: which claim requests wait for a person, who may decide, and the decisions.

* :func:`approval_reasons`: the policy. A request waits (``PENDING_APPROVAL``) when its tenant
  ``requires_approval``, when it crosses one of its class quota's thresholds
  (``approve_above_devices`` / ``_memory`` / ``_lease``), or when it is over the quota and the
  quota says ``approve_over_quota`` (instead of being refused). One line per rule crossed.
* :func:`may_decide`: portal admins decide any request; tenant admins their tenants'
  requests, except their own (someone else looks at it); members never.
* :func:`approve_request`, :func:`deny_request`, :func:`expire_approvals`: the decisions. A
  pending request holds no quota, so approving checks the quota again, atomically under the
  tenant's row lock like a submission; approval never exceeds the quota.
* The same decisions apply to a renewal waiting for approval (``ClaimRequest.renewal_*``,
  recorded by ``claims.requests.services.renew_request``): approving starts the renewed lease from
  now, denying leaves the current lease as it is; the request's state does not change.

Withdrawing a pending request is :func:`claims.requests.services.release_request` (it ends at once:
nothing was made in the cluster).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from claims.lifecycle.leases import exceeded_longest
from claims.lifecycle.tasks import apply_claim_request
from claims.lifecycle.transitions import NO_RENEWAL, Move, transition
from claims.models import ClaimRequest, ClaimRequestQuerySet
from claims.requests.quota import check_quota
from claims.requests.services import QuotaExceeded, clear_renewal, tenant_lock
from claims.requests.specs import SpecErrors
from claims.signals import renewal_decided
from portal.celery import enqueue_on_commit
from portal.models import AuditEvent, Quota, Tenant
from portal.services.audit import record_event
from toolkit.durations import format_duration

__all__ = [
    "approval_deadline",
    "approve_request",
    "deny_request",
    "expire_approvals",
    "is_approver",
    "may_decide",
    "pending_for",
]

State = ClaimRequest.State
COMMENT_MAX = 2000
# A renewal is decided only while the claim still runs.
NOT_RUNNING = (State.PENDING_APPROVAL, State.RELEASING)


# --- who decides -------------------------------------------------------------------------------


def is_approver(user: User | AnonymousUser) -> bool:
    """May ``user`` decide any request at all (portal admin, or admin of some tenant)?"""
    if not user.is_authenticated:
        return False
    return bool(user.is_staff or Tenant.objects.administered_by(user).exists())


def may_decide(
    user: User | AnonymousUser,
    request: ClaimRequest,
    *,
    administered: Collection[int] | None = None,
) -> bool:
    """Portal admins decide any request; a tenant admin their tenant's requests but not their
    own (a second person looks at it; a portal admin may approve their own). ``administered``:
    the ids of the tenants ``user`` administers, when the caller has them (a list page)."""
    if not user.is_authenticated:
        return False
    if user.is_staff:
        return True
    if request.asked_by_id == user.pk:
        return False
    if administered is not None:
        return request.tenant_id in administered
    return Tenant.objects.administered_by(user).filter(pk=request.tenant_id).exists()


def pending_for(user: User | AnonymousUser) -> ClaimRequestQuerySet:
    """The requests ``user`` may decide on, in any state: every request for portal admins,
    their tenants' for tenant admins (their own included, shown but not decidable)."""
    requests = ClaimRequest.objects.all()
    if not user.is_authenticated:
        return requests.none()
    if user.is_staff:
        return requests
    return requests.filter(tenant__in=Tenant.objects.administered_by(user))


def _refuse_decider(user: User | AnonymousUser, request: ClaimRequest) -> None:
    if may_decide(user, request):
        return
    if user.is_authenticated and request.asked_by_id == user.pk and not user.is_staff:
        raise PermissionDenied(
            "You may not decide on your own request: another tenant admin or a portal admin "
            "approves it."
        )
    raise PermissionDenied("Only the tenant's admins and portal admins approve or deny requests.")


def _already(request: ClaimRequest, verb: str) -> SpecErrors:
    """The refusal for deciding a request that is no longer pending."""
    if request.state == State.DENIED:
        who = request.decided_by.get_username() if request.decided_by else "someone"
        text = f"This request was denied by {who}; it cannot be {verb}."
    elif request.decided_at is not None:
        text = f"This request was approved already; it cannot be {verb}."
    elif request.is_active:
        text = (
            f"Nothing of this request waits for approval (it is "
            f"{request.get_state_display().lower()}); it cannot be {verb}."
        )
    else:
        text = f"This request is {request.get_state_display().lower()}; it cannot be {verb}."
    return SpecErrors({"state": [text]})


def _clean_comment(comment: str) -> str:
    return (comment or "").strip()[:COMMENT_MAX]


# --- the decisions -----------------------------------------------------------------------------


def approve_request(
    *, user: User | AnonymousUser, request: ClaimRequest, comment: str = ""
) -> ClaimRequest:
    """Accept a pending request: under the tenant's row lock, check that it fits the quota now
    (raising :class:`claims.requests.services.QuotaExceeded` and leaving it pending if not), move it
    to ``SUBMITTED``, start its lease from now and enqueue applying it once committed; audited.
    Approving a request already approved returns it unchanged; a denied or ended one is a
    :class:`SpecErrors` on ``state``. A running request whose renewal waits for approval gets
    the renewed lease from now instead. Raises ``PermissionDenied`` unless :func:`may_decide`."""
    _refuse_decider(user, request)
    actor = user if user.is_authenticated else None
    comment = _clean_comment(comment)
    with tenant_lock(request.tenant_id) as tenant:
        request.refresh_from_db()
        if request.state != State.PENDING_APPROVAL:
            if request.has_pending_renewal:
                return _approve_renewal(actor, request, comment)
            if request.decided_at is not None and request.state != State.DENIED:
                return request  # approved already: nothing to do
            raise _already(request, "approved")
        _refuse_lease_over_maximum(request, request.lease)
        check = check_quota(
            tenant,
            request.device_class_name,
            devices=request.held_devices,
            memory_bytes=request.held_memory_bytes,
        )
        if not check.fits and not request.admin_access:
            check.problems.append(
                "Approving it would exceed the quota: raise the quota, or wait until the "
                "tenant holds less; the request stays pending."
            )
            raise QuotaExceeded(check)
        now = timezone.now()
        moved = transition(
            request,
            Move.APPROVE,
            actor=actor,
            decided_by=actor,
            decided_at=now,
            decision_comment=comment,
            expires_at=now + request.lease if request.lease else None,
        )
        if not moved:  # denied meanwhile (denying takes no lock)
            raise _already(request, "approved")
        record_event(
            actor=actor,
            action=AuditEvent.Action.CLAIM_APPROVED,
            obj=request,
            tenant=tenant,
            before={"state": State.PENDING_APPROVAL, "reasons": request.approval_reasons},
            after={"state": State.SUBMITTED, "comment": comment},
        )
        enqueue_on_commit(apply_claim_request, str(request.pk))
    return request


def _refuse_lease_over_maximum(request: ClaimRequest, lease: timedelta | None) -> None:
    """An approval never grants more than the quota's longest lease (lowered since?)."""
    quota = Quota.objects.filter(
        tenant=request.tenant_id, device_class_name=request.device_class_name
    ).first()
    max_lease = exceeded_longest(quota, lease)
    if lease and max_lease is not None:
        raise SpecErrors(
            {
                "lease": [
                    f"It asks for a lease of {format_duration(lease)}; the longest "
                    f"lease for {request.device_class_name} is now "
                    f"{format_duration(max_lease)}. Deny it, or raise the quota's maximum."
                ]
            }
        )


def _end_renewal(request: ClaimRequest, **values: Any) -> bool:
    """Clear the renewal waiting on ``request`` (and set ``values``) if it is still the one
    ``request`` holds and the claim still runs: one conditional UPDATE, so two deciders (or a
    decider and a newer renewal) never both act on it. Updates ``request`` in place."""
    moved = (
        ClaimRequest.objects.filter(
            pk=request.pk,
            renewal_requested_at=request.renewal_requested_at,
            state__in=[state for state in ClaimRequest.ACTIVE_STATES if state not in NOT_RUNNING],
        )
        .exclude(renewal_requested_at=None)
        .update(**NO_RENEWAL, **values, updated_at=timezone.now())
    )
    if moved:
        clear_renewal(request)
        for key, value in values.items():
            setattr(request, key, value)
    return bool(moved)


def _approve_renewal(actor: User | None, request: ClaimRequest, comment: str) -> ClaimRequest:
    """Approve the renewal waiting on ``request``: its lease starts again from now. Call under
    the tenant's row lock (the request holds its quota already: nothing else to check)."""
    lease = request.renewal_lease
    assert lease is not None
    _refuse_lease_over_maximum(request, lease)
    asked = {"lease": format_duration(lease), "reasons": request.renewal_reasons}
    asked_by = request.renewal_requested_by
    before = request.expires_at
    now = timezone.now()
    if not _end_renewal(request, lease=lease, expires_at=now + lease):
        request.refresh_from_db()
        raise SpecErrors({"state": ["This renewal was decided or replaced meanwhile."]})
    record_event(
        actor=actor,
        action=AuditEvent.Action.CLAIM_APPROVED,
        obj=request,
        tenant=request.tenant,
        before={"renewal": asked},
        after={"renewal": "approved", "lease": asked["lease"], "comment": comment},
    )
    record_event(
        actor=actor,
        action=AuditEvent.Action.CLAIM_RENEWED,
        obj=request,
        tenant=request.tenant,
        before={"expires_at": before.isoformat() if before else None},
        after={"expires_at": (now + lease).isoformat()},
    )
    renewal_decided.send(
        sender=ClaimRequest,
        request=request,
        approved=True,
        lease=lease,
        comment=comment,
        actor=actor,
        asked_by=asked_by,
    )
    return request


def _deny_renewal(actor: User | None, request: ClaimRequest, comment: str) -> ClaimRequest:
    lease = request.renewal_lease
    asked = {"lease": format_duration(lease) if lease else None, "reasons": request.renewal_reasons}
    asked_by = request.renewal_requested_by
    with transaction.atomic():
        if not _end_renewal(request):
            request.refresh_from_db()
            raise SpecErrors({"state": ["This renewal was decided or replaced meanwhile."]})
        record_event(
            actor=actor,
            action=AuditEvent.Action.CLAIM_DENIED,
            obj=request,
            tenant=request.tenant,
            before={"renewal": asked},
            after={"renewal": "denied", "lease": asked["lease"], "comment": comment},
        )
        renewal_decided.send(
            sender=ClaimRequest,
            request=request,
            approved=False,
            lease=lease,
            comment=comment,
            actor=actor,
            asked_by=asked_by,
        )
    return request


def deny_request(
    *, user: User | AnonymousUser, request: ClaimRequest, comment: str
) -> ClaimRequest:
    """Refuse a pending request, saying why (``comment`` is required); it ends as ``DENIED``
    with nothing made in the cluster; audited. A renewal waiting for approval is refused the
    same way, and the current lease runs on. Denying a denied request returns it; an
    approved or ended one is a :class:`SpecErrors` on ``state``."""
    _refuse_decider(user, request)
    comment = _clean_comment(comment)
    if not comment:
        raise SpecErrors({"comment": ["Say why it is denied: the requester reads it."]})
    actor = user if user.is_authenticated else None
    if request.state == State.DENIED:
        return request
    if request.state != State.PENDING_APPROVAL and request.has_pending_renewal:
        return _deny_renewal(actor, request, comment)
    with transaction.atomic():
        moved = transition(
            request,
            Move.DENY,
            actor=actor,
            reason=f"denied: {comment}",
            decided_by=actor,
            decided_at=timezone.now(),
            decision_comment=comment,
        )
        if not moved:
            if request.state == State.DENIED:
                return request
            raise _already(request, "denied")
        record_event(
            actor=actor,
            action=AuditEvent.Action.CLAIM_DENIED,
            obj=request,
            tenant=request.tenant,
            before={"state": State.PENDING_APPROVAL, "reasons": request.approval_reasons},
            after={"state": State.DENIED, "comment": comment},
        )
    return request


def approval_deadline(request: ClaimRequest) -> datetime:
    """When what waits expires unless decided (``CLAIMS_APPROVAL_TIMEOUT``): a pending
    request, or the renewal waiting on a running one."""
    timeout: timedelta = settings.CLAIMS_APPROVAL_TIMEOUT
    if request.state != State.PENDING_APPROVAL and request.renewal_requested_at is not None:
        return request.renewal_requested_at + timeout
    return request.created_at + timeout


def expire_approvals(now: Any = None) -> int:
    """Beat: pending requests older than ``CLAIMS_APPROVAL_TIMEOUT`` end as ``EXPIRED``;
    renewals waiting that long are dropped (the lease stays as it is), audited."""
    now = now or timezone.now()
    timeout: timedelta = settings.CLAIMS_APPROVAL_TIMEOUT
    expired = 0
    for request in ClaimRequest.objects.filter(
        renewal_requested_at__lte=now - timeout
    ).select_related("tenant"):
        lease = request.renewal_lease
        with transaction.atomic():
            if _end_renewal(request):
                record_event(
                    actor=None,
                    action=AuditEvent.Action.RENEWAL_EXPIRED,
                    obj=request,
                    tenant=request.tenant,
                    before={"renewal": {"lease": format_duration(lease) if lease else None}},
                    after={"reason": f"not approved within {format_duration(timeout)}"},
                )
                expired += 1
    for request in ClaimRequest.objects.filter(
        state=State.PENDING_APPROVAL, created_at__lte=now - timeout
    ).select_related("tenant"):
        expired += transition(
            request,
            Move.APPROVAL_EXPIRED,
            reason=f"not approved within {format_duration(timeout)}",
        )
    return expired
