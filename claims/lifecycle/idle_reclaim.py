"""Reclaiming idle claims in the cluster: the cluster half of ``claims.usage.idle``.

Claims of tenants whose idle policy reclaims are deleted once their grace period is over, and
only while no pod reserves them. The mirror may lag the API server, so right before deleting
the claim is read again from the API server: a claim with anything in ``status.reservedFor`` is
kept, and the delete carries the read's ``resourceVersion`` and ``uid`` as preconditions, so a
pod that reserves the claim between the read and the delete makes the API server refuse it
(``Conflict``: kept for now, looked at again by the next run).

Safe to retry and to run twice: a claim already deleting (an earlier run's delete) is only
finished, the ``reclaimed_at`` mark is set by a conditional update and is what the audit event
and the owner's notice hang on. A claim the portal made for a request also ends that request
(``claims.lifecycle.release.release_request`` lifts the portal's finalizer).
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from claims.lifecycle.apply import Retry
from claims.lifecycle.release import release_request
from claims.lifecycle.transitions import Move, transition
from claims.models import ClaimIdleness, ClaimRequest
from claims.signals import claim_reclaimed
from claims.usage.idle import IDLE_RECLAIM_REASON, claim_owner
from kube.client import Cluster
from kube.errors import Conflict, NotFound, Unavailable
from kube.kinds import Kind
from portal.cluster import connected
from portal.models import AuditEvent
from portal.services.audit import record_event

__all__ = ["RECLAIM_BATCH", "reclaim_idle_claims"]

log = logging.getLogger(__name__)
State = ClaimRequest.State
# Claims looked at per run; the rest wait for the next run.
RECLAIM_BATCH = 200


def reclaim_idle_claims(now: datetime.datetime | None = None) -> dict[str, int]:
    """Beat: deletes the idle claims due for reclaim that no pod reserves. Answers how many
    were reclaimed, kept (a pod reserves them, or the claim changed under us), or gone."""
    now = now or timezone.now()
    counts = {"reclaimed": 0, "kept": 0, "gone": 0}
    due = list(
        ClaimIdleness.objects.due_for_reclaim(now)
        .select_related("claim", "claim__tenant")
        .order_by("reclaim_at")[:RECLAIM_BATCH]
    )
    if not due:
        return counts
    try:
        with connected() as cluster:
            for idleness in due:
                counts[_reclaim(cluster, idleness, now)] += 1
    except Unavailable as error:
        log.warning("Idle reclaim waits for the API server: %s", error)
    return counts


def _audit_kept(idleness: ClaimIdleness, reserved: list[Any], why: str) -> None:
    claim = idleness.claim
    with transaction.atomic():
        record_event(
            actor=None,
            action=AuditEvent.Action.CLAIM_RECLAIM_SKIPPED,
            obj=claim,
            tenant=claim.tenant,
            after={
                "why": why,
                "reserved_for": [
                    f"{r.get('resource', '')}/{r.get('name', '')}"
                    for r in reserved
                    if isinstance(r, dict)
                ],
                "episode": idleness.episode,
            },
        )


def _reclaim(cluster: Cluster, idleness: ClaimIdleness, now: datetime.datetime) -> str:
    claim = idleness.claim
    try:
        found = cluster.get(Kind.RESOURCE_CLAIMS, claim.name, claim.namespace)
    except NotFound:
        return "gone"  # deleted meanwhile; the mirror drops the row
    metadata = found.get("metadata") or {}
    if metadata.get("uid") != claim.uid:
        return "gone"  # a new claim took the name: the sweep looks at it afresh
    if not metadata.get("deletionTimestamp"):
        reserved = (found.get("status") or {}).get("reservedFor") or []
        if reserved:
            _audit_kept(idleness, reserved, "a pod reserves it")
            return "kept"
        try:
            cluster.delete(
                Kind.RESOURCE_CLAIMS,
                claim.name,
                claim.namespace,
                uid=metadata["uid"],
                resource_version=metadata["resourceVersion"],
            )
        except NotFound:
            return "gone"
        except Conflict:
            # Changed since the read (a pod may have just reserved it): next run decides.
            _audit_kept(idleness, [], "it changed while being reclaimed")
            return "kept"
    _end_request(found)
    _mark_reclaimed(idleness, now)
    return "reclaimed"


def _end_request(found: dict[str, Any]) -> None:
    """The portal's request for the claim, if any, ends (released, its finalizer lifted)."""
    request_id = ClaimRequest.request_id_in((found.get("metadata") or {}).get("labels"))
    request = ClaimRequest.objects.filter(pk=request_id).first() if request_id else None
    if request is None or not request.is_active:
        return
    if request.state != State.RELEASING:
        transition(
            request,
            Move.RELEASE,
            reason=IDLE_RECLAIM_REASON,
        )
    try:
        release_request(str(request.pk))
    except Retry as error:
        # The claim is deleting already; the resume beat task finishes the request.
        log.warning("Releasing request %s after idle reclaim waits: %s", request.pk, error)


def _mark_reclaimed(idleness: ClaimIdleness, now: datetime.datetime) -> None:
    claim = idleness.claim
    with transaction.atomic():
        marked = ClaimIdleness.objects.filter(pk=idleness.pk, reclaimed_at__isnull=True).update(
            reclaimed_at=now
        )
        if not marked:
            return  # another run got there first
        record_event(
            actor=None,
            action=AuditEvent.Action.CLAIM_RECLAIMED,
            obj=claim,
            tenant=claim.tenant,
            after={
                "reason": idleness.reason,
                "idle_since": idleness.idle_since.isoformat() if idleness.idle_since else None,
                "reclaim_at": idleness.reclaim_at.isoformat() if idleness.reclaim_at else None,
                "episode": idleness.episode,
            },
        )
        owner = claim_owner(claim)
        claim_reclaimed.send(
            sender=ClaimIdleness,
            claim_id=claim.pk,
            namespace=claim.namespace,
            name=claim.name,
            tenant_id=claim.tenant_id,
            owner_id=owner.pk if owner is not None else None,
            reason=idleness.reason,
        )
    log.info("Reclaimed idle claim %s (%s)", claim, idleness.reason)
