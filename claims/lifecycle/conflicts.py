"""After a reservation is written the scheduler may still hand its devices to another claim
(its informer had not seen the portal's write). These find such reservations in the mirror and
move them around the other claim, or say so where pods already run on them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from claims.capacity.index import Placement, index
from claims.lifecycle.apply import Retry, place, why
from claims.lifecycle.transitions import Move, transition
from claims.models import AllocatedDevice, AllocationMode, ClaimRequest
from kube.errors import Unavailable
from kube.kinds import Kind
from portal.cluster import connected
from portal.models import AuditEvent
from portal.services.audit import record_event

__all__ = ["CONFLICT_WINDOW", "conflicted_reservations", "verify_reservation"]

State = ClaimRequest.State
# How long after applying a reservation the scheduler may still hand its devices to another
# claim (it learns of our write through its informer).
CONFLICT_WINDOW = timedelta(seconds=30)
MAX_CONFLICT_RETRIES = 3


def verify_reservation(request_id: str) -> str:
    """After a reservation is written, look in the mirror for another claim holding one of its
    devices (the scheduler's informer had not seen our write yet). If one does, move ours:
    clear our allocation, allocate again around theirs, write it, and record the conflict."""
    request = ClaimRequest.objects.filter(pk=request_id).first()
    if (
        request is None
        or request.mode != AllocationMode.RESERVATION
        or request.state not in (State.APPLIED, State.IN_USE)
        or not request.allocation
    ):
        return "nothing to do"
    keys = Placement(allocation=request.allocation).keys
    others = [
        row
        for row in AllocatedDevice.objects.holders_of(keys)
        if row[3:] != (request.namespace, request.name)
    ]
    if not others:
        return "ok"
    if request.state == State.IN_USE or request.conflicts >= MAX_CONFLICT_RETRIES:
        # Pods run on our devices already, or we keep losing: say so rather than move them.
        with transaction.atomic():
            record_event(
                actor=None,
                action=AuditEvent.Action.CLAIM_CONFLICT,
                obj=request,
                tenant=request.tenant,
                after={"devices": [list(row) for row in others], "resolved": False},
            )
        return "conflict left: in use"
    holders = sorted({f"{ns}/{name}" for *_, ns, name in others})
    old = request.allocation
    try:
        with connected() as cluster:
            cleared = cluster.patch_status(
                Kind.RESOURCE_CLAIMS,
                request.name,
                {"status": {"allocation": None}},
                namespace=request.namespace,
            )
            # The portal's own writes move claim_version: following never takes them for
            # someone else's (mirror.following).
            ClaimRequest.objects.filter(pk=request.pk).update(
                allocation=None,
                conflicts=request.conflicts + 1,
                claim_version=_version_of(cleared),
                updated_at=timezone.now(),
            )
            request.allocation = None
            index().forget(str(request.pk))
            index().catch_up()
            placement = place(request)
            with transaction.atomic():
                record_event(
                    actor=None,
                    action=AuditEvent.Action.CLAIM_CONFLICT,
                    obj=request,
                    tenant=request.tenant,
                    before={"allocation": old, "held_by": holders},
                    after={"allocation": placement.allocation, "resolved": True},
                )
            if placement.allocation is None:
                transition(
                    request,
                    Move.LOSE,
                    reason=f"Lost devices to {', '.join(holders)} and no others fit: "
                    + why(placement),
                )
                cluster.delete(Kind.RESOURCE_CLAIMS, request.name, request.namespace)
                return "conflict: failed"
            written = cluster.patch_status(
                Kind.RESOURCE_CLAIMS,
                request.name,
                {"status": {"allocation": placement.allocation}},
                namespace=request.namespace,
            )
            ClaimRequest.objects.filter(pk=request.pk).update(claim_version=_version_of(written))
    except Unavailable as error:
        raise Retry(str(error)) from error
    return "conflict: moved"


def _version_of(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def conflicted_reservations() -> list[str]:
    """Reservations written within the conflict window whose devices another claim in the
    mirror also holds: one query for all of them (the cheap check that runs after every
    apply; only these go on to :func:`verify_reservation`)."""
    since = timezone.now() - CONFLICT_WINDOW
    owners: dict[tuple[str, str, str], tuple[str, str, str]] = {}
    for pk, namespace, name, allocation in ClaimRequest.objects.filter(
        mode=AllocationMode.RESERVATION,
        state=State.APPLIED,
        applied_at__gte=since,
        allocation__isnull=False,
    ).values_list("pk", "namespace", "name", "allocation"):
        for key in Placement(allocation=allocation).keys:
            owners[key] = (str(pk), namespace, name)
    if not owners:
        return []
    conflicted = set()
    for driver, pool, device, namespace, name in AllocatedDevice.objects.holders_of(owners):
        owner = owners[(driver, pool, device)]
        if (namespace, name) != owner[1:]:
            conflicted.add(owner[0])
    return sorted(conflicted)
