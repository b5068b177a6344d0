"""Applying, releasing and checking the portal's claim requests in the cluster.

The cluster half of the lifecycle in ``claims.requests.services``: the services decide, these
functions talk to the API server (through ``kube.client``, the one module that does) and move the
request on with ``claims.lifecycle.transitions``. Each is idempotent and safe to run twice or to
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

import logging
from typing import Any

from django.utils import timezone

from claims.capacity.index import Placement, index
from claims.lifecycle.manifest import manifest
from claims.lifecycle.transitions import Move, transition
from claims.models import AllocationMode, ClaimRequest
from claims.signals import request_applied
from kube.errors import AlreadyExists, ClusterError, Unavailable
from kube.kinds import Kind
from portal.cluster import connected
from portal.metrics import APPLY_OUTCOMES, APPLY_SECONDS

__all__ = ["Retry", "apply_request", "place", "why"]

log = logging.getLogger(__name__)
State = ClaimRequest.State


class Retry(Exception):
    """The API server is unreachable: try again later (the request stays where it is)."""


def _fail(request: ClaimRequest, reason: str) -> None:
    if transition(request, Move.FAIL, reason=reason):
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
        return found if request.made(labels) else None


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


def place(request: ClaimRequest) -> Placement:
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


def why(placement: Placement) -> str:
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
            _fail(request, why(placement))
            return "failed: no devices"
        fields.update(allocation=placement.allocation, node_name=placement.node or "")
    if request.state == State.SUBMITTED:
        moved = transition(request, Move.START, **fields)
    else:  # resumed: already allocating, nothing new to record in the trail
        moved = transition(request, Move.RETRY, **fields)
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
            where: dict[str, Any] = {  # more fields for transition to write
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
    if transition(request, Move.APPLY, **where):
        APPLY_OUTCOMES.labels("applied").inc()
        # Submitted when created, or when approved (a request that waited for approval).
        submitted = max(request.created_at, request.decided_at or request.created_at)
        waited = (timezone.now() - submitted).total_seconds()
        APPLY_SECONDS.labels(request.mode).observe(max(0.0, waited))
        # The mirror may have shown the claim (even a pod using it) before it was applied.
        request_applied.send(sender=ClaimRequest, request=request)
    return "applied"
