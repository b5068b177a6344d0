"""Applying, releasing and checking the portal's claim requests in the cluster.

The cluster half of the lifecycle in ``claims.services``: the services decide, these functions
talk to the API server (through ``kube.client``, the one module that does) and move the
request on with ``claims.services.transition``. Each is idempotent and safe to run twice or to
resume after a worker died halfway:

* the claim carries the request id as a label: a create that finds an object of that name
  checks the label and carries on with it (a retry), or fails the request (a name taken by
  someone else);
* reservation mode writes the allocation on the request's row before writing it to the
  cluster, so a resumed apply writes the same devices, and the index assumes them meanwhile;
* an unreachable API server leaves the request where it was; Celery retries with backoff and
  the ``resume`` beat task picks up anything left behind.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from claims.index import Placement, index
from claims.models import (
    REQUEST_ID_LABEL,
    RESERVATION_FINALIZER,
    AllocatedDevice,
    AllocationMode,
    ClaimRequest,
)
from claims.services import CLAIM_DELETED_REASON, CLUSTER_REPLACED_REASON, transition
from kube.errors import AlreadyExists, ClusterError, Conflict, NotFound, Unavailable
from kube.kinds import Kind
from mirror.following import follow_requests
from portal.cluster import connected
from portal.metrics import APPLY_OUTCOMES, APPLY_SECONDS
from portal.models import AuditEvent
from portal.services.audit import record_event

__all__ = [
    "apply_request",
    "manifest",
    "conflicted_reservations",
    "release_request",
    "resume_requests",
    "sync_requests",
    "verify_reservation",
]

log = logging.getLogger(__name__)
State = ClaimRequest.State
# How long after applying a reservation the scheduler may still hand its devices to another
# claim (it learns of our write through its informer).
CONFLICT_WINDOW = timedelta(seconds=30)
MAX_CONFLICT_RETRIES = 3


class Retry(Exception):
    """The API server is unreachable: try again later (the request stays where it is)."""


def manifest(request: ClaimRequest) -> tuple[Kind, dict[str, Any]]:
    """The object applying ``request`` creates: a ResourceClaim, or a ResourceClaimTemplate."""
    metadata: dict[str, Any] = {
        "name": request.name,
        "namespace": request.namespace,
        "labels": {REQUEST_ID_LABEL: str(request.pk), "app.kubernetes.io/managed-by": "dra-portal"},
        "annotations": {
            "dra-portal.io/requested-by": (
                request.requested_by.get_username() if request.requested_by else ""
            ),
            "dra-portal.io/mode": request.mode,
        },
    }
    if request.expires_at:
        metadata["annotations"]["dra-portal.io/expires-at"] = request.expires_at.isoformat()
    if request.is_template:
        return Kind.RESOURCE_CLAIM_TEMPLATES, {"metadata": metadata, "spec": {"spec": request.spec}}
    if request.mode == AllocationMode.RESERVATION:
        metadata["finalizers"] = [RESERVATION_FINALIZER]
    return Kind.RESOURCE_CLAIMS, {"metadata": metadata, "spec": request.spec}


def _fail(request: ClaimRequest, reason: str) -> None:
    if transition(request, State.FAILED, expect=[State.SUBMITTED, State.ALLOCATING], reason=reason):
        APPLY_OUTCOMES.labels("failed").inc()
    index().forget(str(request.pk))


def _ensure_object(cluster: Any, request: ClaimRequest) -> dict[str, Any] | None:
    """Create the claim or template, or find the one an earlier attempt created. None when the
    name belongs to an object the portal did not create for this request."""
    kind, body = manifest(request)
    try:
        return cluster.create(kind, body)
    except AlreadyExists:
        found = cluster.get(kind, request.name, request.namespace)
        labels = (found.get("metadata") or {}).get("labels") or {}
        return found if labels.get(REQUEST_ID_LABEL) == str(request.pk) else None


def _choose(request: ClaimRequest) -> Placement:
    """Choose devices for a reservation; the process's index assumes them at once."""
    shared = index()
    with shared.lock:
        claim = shared.parse(request.namespace, request.name, request.spec)
        placement = shared.place(claim)
        if placement.allocation is not None:
            shared.assume(str(request.pk), placement)
    if placement.allocation is not None:
        # Set the time ourselves: a 1.36 scheduler that reserves a claim allocated without one
        # adds it, and the API server refuses that as a change to the immutable allocation
        # (seen on a real control plane: the pod never schedules).
        placement.allocation["allocationTimestamp"] = timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    return placement


def _place(request: ClaimRequest) -> Placement:
    """:func:`_choose`, and keep the choice on the row (every index then assumes it)."""
    placement = _choose(request)
    if placement.allocation is not None:
        ClaimRequest.objects.filter(pk=request.pk).update(
            allocation=placement.allocation,
            node_name=placement.node or "",
            updated_at=timezone.now(),
        )
        request.allocation, request.node_name = placement.allocation, placement.node or ""
    return placement


def _why(placement: Placement) -> str:
    if placement.error:
        return f"Cannot allocate: {placement.error}"
    parts = []
    for explanation in placement.explanations:
        stage = explanation.blocking_stage
        counts = explanation.counts
        where = f" on {explanation.node}" if explanation.node else ""
        if stage is None:
            parts.append(
                f"{explanation.request}: devices match{where}, but not together "
                "(constraints or counts)"
            )
        else:
            parts.append(
                f"{explanation.request}: no device left at the '{stage}' stage{where} "
                f"({', '.join(f'{k} {v}' for k, v in counts.items())})"
            )
        parts.extend(explanation.errors[:2])
    return "No devices fit now. " + "; ".join(parts)


def apply_request(request_id: str) -> str:
    """Create the request's claim (and, in reservation mode, allocate and write its status).
    Returns what happened; raises :class:`Retry` while the API server is unreachable."""
    request = (
        ClaimRequest.objects.select_related("requested_by", "tenant").filter(pk=request_id).first()
    )
    if request is None or request.state not in (State.SUBMITTED, State.ALLOCATING):
        return "nothing to do"
    reservation = request.mode == AllocationMode.RESERVATION
    # The devices are chosen before the move to allocating and stored with it: one commit,
    # and a resumed apply finds the same devices on the row.
    fields: dict[str, Any] = {"attempts": request.attempts + 1}
    if reservation and request.allocation is None:
        placement = _choose(request)
        if placement.allocation is None:
            _fail(request, _why(placement))
            return "failed: no devices"
        fields.update(allocation=placement.allocation, node_name=placement.node or "")
    if request.state == State.SUBMITTED:
        moved = transition(request, State.ALLOCATING, expect=[State.SUBMITTED], **fields)
    else:  # resumed: already allocating, nothing new to record in the trail
        moved = bool(
            ClaimRequest.objects.filter(pk=request.pk, state=State.ALLOCATING).update(
                **fields, updated_at=timezone.now()
            )
        )
        for key, value in fields.items():
            setattr(request, key, value)
    if not moved:
        index().forget(str(request.pk))
        return "taken by another worker"
    try:
        with connected() as cluster:
            found = _ensure_object(cluster, request)
            if found is None:
                _fail(
                    request,
                    f"A claim named {request.name} already exists in {request.namespace} and "
                    "was not made for this request.",
                )
                return "failed: name taken"
            if reservation and not (found.get("status") or {}).get("allocation"):
                found = cluster.patch_status(
                    Kind.RESOURCE_CLAIMS,
                    request.name,
                    {"status": {"allocation": request.allocation}},
                    namespace=request.namespace,
                )
            # Where the claim lives: the mirror tells from these whether it is gone, and
            # whether an allocation it shows is newer than this write (mirror.following).
            metadata = found.get("metadata") or {}
            where = {
                "claim_uid": str(metadata.get("uid") or ""),
                "claim_version": str(metadata.get("resourceVersion") or ""),
                "cluster_uid": cluster.identity(),
            }
    except Unavailable as error:
        APPLY_OUTCOMES.labels("unreachable").inc()
        raise Retry(str(error)) from error
    except ClusterError as error:
        # Also in the log: a refusal is most often the portal's own RBAC or admission.
        log.warning("request %s: the API server refused the claim: %s", request.pk, error)
        _fail(request, f"The API server refused the claim: {error}")
        return "failed: refused"
    if transition(request, State.APPLIED, expect=[State.ALLOCATING], **where):
        APPLY_OUTCOMES.labels("applied").inc()
        # Submitted when created, or when approved (a request that waited for approval).
        submitted = max(request.created_at, request.decided_at or request.created_at)
        waited = (timezone.now() - submitted).total_seconds()
        APPLY_SECONDS.labels(request.mode).observe(max(0.0, waited))
        # The mirror may have shown the claim (even a pod using it) before it was applied.
        follow_requests([(request.namespace, request.name)])
    return "applied"


def release_request(request_id: str) -> str:
    """Delete the request's claim (removing the portal's finalizer first) and end it."""
    request = ClaimRequest.objects.filter(pk=request_id).first()
    if request is None or request.state != State.RELEASING:
        return "nothing to do"
    kind, _ = manifest(request)
    try:
        with connected() as cluster:
            try:
                found = cluster.get(kind, request.name, request.namespace)
            except NotFound:
                found = None
            labels = ((found or {}).get("metadata") or {}).get("labels") or {}
            if found is not None and labels.get(REQUEST_ID_LABEL) == str(request.pk):
                finalizers = found["metadata"].get("finalizers") or []
                if RESERVATION_FINALIZER in finalizers:
                    kept = [f for f in finalizers if f != RESERVATION_FINALIZER]
                    cluster.patch(
                        kind,
                        request.name,
                        [
                            {
                                "op": "test",
                                "path": "/metadata/resourceVersion",
                                "value": found["metadata"]["resourceVersion"],
                            },
                            {"op": "replace", "path": "/metadata/finalizers", "value": kept},
                        ],
                        namespace=request.namespace,
                        patch_type="json",
                    )
                with contextlib.suppress(NotFound):
                    cluster.delete(
                        kind, request.name, request.namespace, uid=found["metadata"]["uid"]
                    )
    except Conflict as error:
        raise Retry(str(error)) from error
    except Unavailable as error:
        raise Retry(str(error)) from error
    end = State.EXPIRED if request.lease_ended else State.RELEASED
    transition(request, end, expect=[State.RELEASING], reason=request.reason)
    index().forget(str(request.pk))
    return end


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
        for row in AllocatedDevice.objects.filter(
            admin_access=False, share_id="", device_name__in={k[2] for k in keys}
        )
        .exclude(claim__namespace=request.namespace, claim__name=request.name)
        .values_list("driver", "pool", "device_name", "claim__namespace", "claim__name")
        if row[:3] in keys
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
            placement = _place(request)
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
                    State.FAILED,
                    expect=[State.APPLIED],
                    reason=f"Lost devices to {', '.join(holders)} and no others fit: "
                    + _why(placement),
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


def sync_requests() -> dict[str, int]:
    """Beat, the backstop of following the mirror (``mirror.following``, which the claims
    reflector runs after every batch): in use ↔ applied, claims gone, allocations moved; a
    claim the mirror cannot account for (its watcher is down) is looked up in the API server
    once the request has been quiet for a while."""
    return follow_requests(backstop=True, confirm=_confirm_gone)


def _confirm_gone(request: ClaimRequest) -> str:
    """Asks the API server for the request's claim: why it is gone, or "" (there, or the
    server cannot tell now)."""
    kind, _ = manifest(request)
    try:
        with connected() as cluster:
            try:
                found = cluster.get(kind, request.name, request.namespace)
            except NotFound:
                found = None
            identity = cluster.identity() if found is None else ""
    except ClusterError:
        return ""
    if found is not None:
        uid = str((found.get("metadata") or {}).get("uid") or "")
        return CLAIM_DELETED_REASON if request.claim_uid and uid != request.claim_uid else ""
    if request.cluster_uid and identity and identity != request.cluster_uid:
        return CLUSTER_REPLACED_REASON
    return CLAIM_DELETED_REASON


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
    for *key, namespace, name in AllocatedDevice.objects.filter(
        admin_access=False, share_id="", device_name__in={key[2] for key in owners}
    ).values_list("driver", "pool", "device_name", "claim__namespace", "claim__name"):
        owner = owners.get((key[0], key[1], key[2]))
        if owner is not None and (namespace, name) != owner[1:]:
            conflicted.add(owner[0])
    return sorted(conflicted)


def resume_requests() -> list[str]:
    """Beat: requests left in submitted/allocating/releasing (a worker died, the API server was
    down) longer than ``CLAIMS_RESUME_AFTER_SECONDS``: their ids, to enqueue again."""
    before = timezone.now() - timedelta(seconds=settings.CLAIMS_RESUME_AFTER_SECONDS)
    return [
        str(pk)
        for pk in ClaimRequest.objects.filter(
            state__in=[State.SUBMITTED, State.ALLOCATING, State.RELEASING], updated_at__lt=before
        ).values_list("pk", flat=True)
    ]
