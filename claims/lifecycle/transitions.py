"""The request's state machine: every move a claim request can make, declared once.

A move names where a request may come from and where it goes. :func:`transition` is the only
way a request's state changes: one conditional ``UPDATE … WHERE state IN (sources)``, so two
workers never both make the same move; audited (``claim_state``) and announced
(``claims.signals.request_state_changed``) in the same transaction. A move whose source is its
target (``RETRY``: a resumed apply counting another attempt) changes fields, not the state, and
is neither audited nor announced.

::

    pending_approval ─APPROVE→ submitted ─START→ allocating ─APPLY→ applied ⇄ in_use
        │ DENY, WITHDRAW, APPROVAL_EXPIRED             │ FAIL           │ LOSE (failed)
        ▼                                              ▼                ▼ GONE (released)
    denied / withdrawn / expired                     failed      RELEASE → releasing
                                                                   ─END→ released / expired
"""

from __future__ import annotations

import enum
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from claims.models import ClaimRequest
from claims.signals import request_state_changed
from portal.models import AuditEvent
from portal.services.audit import record_event

__all__ = [
    "CLAIM_DELETED_REASON",
    "CLUSTER_REPLACED_REASON",
    "FORCED_RELEASE_REASON",
    "GONE_REASONS",
    "NO_RENEWAL",
    "RENEWAL_FIELDS",
    "Move",
    "transition",
]

State = ClaimRequest.State
_RUNNING = tuple(s for s in ClaimRequest.ACTIVE_STATES if s != State.RELEASING)

# The reason a portal admin's forced release records (notifications call it a reclaim).
FORCED_RELEASE_REASON = "release forced by a portal admin"
# The reasons a request ends with when its claim is gone from the cluster (mirror.following;
# notifications tell the owner).
CLAIM_DELETED_REASON = "its claim was deleted from the cluster outside the portal"
CLUSTER_REPLACED_REASON = "the cluster was replaced: its claim is not in the new cluster"
GONE_REASONS = (CLAIM_DELETED_REASON, CLUSTER_REPLACED_REASON)

# A renewal waiting for approval goes with the claim it would have renewed.
NO_RENEWAL: dict[str, Any] = {
    "renewal_lease": None,
    "renewal_reasons": [],
    "renewal_requested_at": None,
    "renewal_requested_by": None,
}
RENEWAL_FIELDS = tuple(NO_RENEWAL)


class Move(enum.Enum):
    """(sources, target) of each move; ``Move.X.value`` is the pair."""

    APPROVE = ((State.PENDING_APPROVAL,), State.SUBMITTED)
    DENY = ((State.PENDING_APPROVAL,), State.DENIED)
    WITHDRAW = ((State.PENDING_APPROVAL,), State.WITHDRAWN)
    APPROVAL_EXPIRED = ((State.PENDING_APPROVAL,), State.EXPIRED)
    START = ((State.SUBMITTED,), State.ALLOCATING)
    RETRY = ((State.ALLOCATING,), State.ALLOCATING)
    FAIL = ((State.SUBMITTED, State.ALLOCATING), State.FAILED)
    APPLY = ((State.ALLOCATING,), State.APPLIED)
    START_USE = ((State.APPLIED,), State.IN_USE)
    END_USE = ((State.IN_USE,), State.APPLIED)
    LOSE = ((State.APPLIED,), State.FAILED)
    GONE = ((State.APPLIED, State.IN_USE), State.RELEASED)
    RELEASE = (_RUNNING, State.RELEASING)
    END = ((State.RELEASING,), State.RELEASED)
    END_LEASE = ((State.RELEASING,), State.EXPIRED)

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(self.value[0])

    @property
    def target(self) -> str:
        return str(self.value[1])


def transition(
    request: ClaimRequest,
    move: Move,
    *,
    reason: str = "",
    actor: User | None = None,
    **fields: Any,
) -> bool:
    """Make ``move`` if ``request`` is still in one of its sources; False (``request`` read
    again) if it moved meanwhile. Updates ``request`` in place."""
    to = move.target
    now = timezone.now()
    values: dict[str, Any] = {"updated_at": now, **fields}
    if move.sources == (to,):
        moved = ClaimRequest.objects.filter(pk=request.pk, state=to).update(**values)
        if moved:
            for key, value in values.items():
                setattr(request, key, value)
        return bool(moved)
    values["state"] = to
    if reason or to == State.FAILED:
        values["reason"] = reason[:2000]
    if to in ClaimRequest.ENDED_STATES:
        values["ended_at"] = now
    if to == State.RELEASING or to in ClaimRequest.ENDED_STATES:
        values |= NO_RENEWAL
    if to == State.APPLIED and "applied_at" not in fields:
        values["applied_at"] = request.applied_at or now
    with transaction.atomic():
        moved = ClaimRequest.objects.filter(pk=request.pk, state__in=move.sources).update(**values)
        if not moved:
            request.refresh_from_db()
            return False
        before = request.state
        for key, value in values.items():
            setattr(request, key, value)
        record_event(
            actor=actor,
            action=AuditEvent.Action.CLAIM_STATE,
            obj=request,
            tenant=request.tenant,
            before={"state": before},
            after={"state": to, **({"reason": reason} if reason else {})},
        )
        request_state_changed.send(
            sender=ClaimRequest,
            request=request,
            before=before,
            after=to,
            reason=reason,
            actor=actor,
        )
    return True
