"""Portal requests follow the mirror of their claims: a request shows what the cluster holds.

For every applied or in-use request, from the claim (or template) applying it made:

* **in use ↔ applied**, by the claim's ``reservedFor`` (both allocation modes);
* **gone**: a claim no longer in the cluster ends its request as released, with the reason
  (audited, the owner told, its quota freed), once the mirror can tell: the claims mirror is
  of the cluster the claim was made in and has reached the resourceVersion the portal last
  wrote it at, or it has listed the cluster since the claim was made (a replaced or restarted
  cluster lists without it). A claim merely not mirrored yet keeps its request;
* **moved**: a reservation the cluster holds on other devices than the portal wrote is
  followed. kube-scheduler clears the allocation of a claim nobody reserves when a pod using it
  cannot be scheduled ("deallocation of ResourceClaim completed"), then allocates it again
  wherever the pod fits, whoever wrote the first allocation. The request takes the cluster's
  allocation and node, a conflict is counted and audited (devices before and after) and its
  owner told. Only an allocation newer than the portal's own last write to the claim counts,
  so the portal's own moves (``claims.lifecycle.conflicts``) never look like one.
  An allocation cleared and not replaced is followed by the beat backstop only, once the
  claim has been without one for ``MIRROR_GRACE`` (the scheduler usually allocates it again
  first: one conflict, from the portal's devices to the scheduler's). It is not reserved again
  automatically: a pod that cannot run where the portal reserves would have it cleared again.

The claims reflector runs :func:`follow_claims` after every batch that changed claims or
templates (for the names in the batch; for all after a relist), so requests follow within
seconds; ``claims.sync_requests`` (beat) runs the same with the backstop's extra checks. Every
change is a conditional update: safe to run twice, and concurrently.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from celery import shared_task
from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone

from claims.lifecycle.manifest import manifest
from claims.lifecycle.transitions import (
    CLAIM_DELETED_REASON,
    CLUSTER_REPLACED_REASON,
    Move,
    transition,
)
from claims.models import (
    AllocatedDevice,
    AllocationMode,
    AllocationRecord,
    ClaimRequest,
    ResourceClaim,
    ResourceClaimTemplate,
)
from claims.signals import claim_moved, tenant_usage_changed
from kube.errors import ClusterError
from kube.kinds import Kind
from mirror.models import MirrorStatus
from mirror.store import is_newer
from portal.cluster import connected
from portal.models import AuditEvent, TenantNamespace
from portal.services.audit import record_event

__all__ = [
    "MIRROR_GRACE",
    "follow_claims",
    "follow_applied",
    "follow_requests",
    "node_of",
    "sync_requests",
    "why_gone",
]

log = logging.getLogger(__name__)
State = ClaimRequest.State
FOLLOWED = [State.APPLIED, State.IN_USE]
# How long a request must have been left alone before the backstop follows a cleared
# allocation, or asks the API server about a claim the mirror cannot account for.
MIRROR_GRACE = timedelta(seconds=30)

DeviceKey = tuple[str, str, str]
# Asks the API server whether a request's claim is gone: the reason, or "".
Confirm = Callable[[ClaimRequest], str]


@dataclass(frozen=True, slots=True)
class _Position:
    """What the mirror of one kind has seen: the cluster it lists, how far its history, and
    when its last complete list started."""

    cluster_uid: str
    resource_version: str
    listed_since: datetime

    @classmethod
    def of(cls, kind: Kind) -> _Position | None:
        """None while the kind has never been listed completely (nothing can be told)."""
        status = MirrorStatus.objects.filter(kind=kind.value).first()
        if status is None or status.last_list_at is None or not status.resource_version:
            return None
        started = status.last_list_at - timedelta(seconds=status.last_list_seconds or 0)
        return cls(status.cluster_uid, status.resource_version, started)


@dataclass(frozen=True, slots=True)
class _Row:
    """A mirrored claim or template, as following reads it."""

    pk: int
    uid: str
    resource_version: str
    consumers: int = 0
    is_allocated: bool = False


def node_of(allocation: dict[str, Any] | None) -> str:
    """The node an allocation's node selector names (``metadata.name In [node]``), or ""."""
    terms = ((allocation or {}).get("nodeSelector") or {}).get("nodeSelectorTerms") or []
    for term in terms:
        for requirement in (term or {}).get("matchFields") or []:
            values = requirement.get("values") or []
            if requirement.get("key") == "metadata.name" and len(values) == 1:
                return str(values[0])
    return ""


def _keys(allocation: dict[str, Any] | None) -> set[DeviceKey]:
    results = ((allocation or {}).get("devices") or {}).get("results") or []
    return {(str(r.get("driver")), str(r.get("pool")), str(r.get("device"))) for r in results}


def why_gone(request: ClaimRequest, position: _Position | None) -> str:
    """Why the request's claim, absent from the mirror, is gone from the cluster; "" while
    the mirror cannot tell (it has not caught up with the claim's creation)."""
    if position is None:
        return ""
    listed_since_applied = (
        request.applied_at is not None and position.listed_since > request.applied_at
    )
    if request.cluster_uid and position.cluster_uid and request.cluster_uid != position.cluster_uid:
        # The mirror lists another cluster: a newer one only if it listed it after the apply.
        return CLUSTER_REPLACED_REASON if listed_since_applied else ""
    if listed_since_applied:
        return CLAIM_DELETED_REASON
    if request.claim_version and not is_newer(request.claim_version, position.resource_version):
        return CLAIM_DELETED_REASON
    return ""


def _rows(requests: Sequence[ClaimRequest], *, templates: bool) -> dict[tuple[str, str], _Row]:
    names = {r.name for r in requests if r.is_template == templates}
    if not names:
        return {}
    if templates:
        return {
            (namespace, name): _Row(pk, uid, version)
            for pk, uid, version, namespace, name in ResourceClaimTemplate.objects.filter(
                name__in=names
            ).values_list("pk", "uid", "resource_version", "namespace", "name")
        }
    return {
        (namespace, name): _Row(pk, uid, version, consumers, allocated)
        for pk, uid, version, namespace, name, consumers, allocated in ResourceClaim.objects.filter(
            name__in=names
        ).values_list(
            "pk", "uid", "resource_version", "namespace", "name", "consumer_count", "is_allocated"
        )
    }


def follow_requests(
    names: Iterable[Sequence[str]] | None = None,
    *,
    backstop: bool = False,
    confirm: Confirm | None = None,
) -> dict[str, int]:
    """Brings the requests of the claims ``names`` (``(namespace, name)`` pairs; every applied
    or in-use request when None) in line with the mirror. ``backstop`` (beat) also follows a
    cleared allocation and, through ``confirm``, asks the API server about claims the mirror
    cannot account for. Returns what changed."""
    counts = {"in_use": 0, "applied": 0, "gone": 0, "moved": 0}
    wanted = None if names is None else {(str(ns), str(name)) for ns, name in names}
    requests = ClaimRequest.objects.filter(state__in=FOLLOWED).select_related("tenant")
    if wanted is not None:
        if not wanted:
            return counts
        requests = requests.filter(name__in={name for _, name in wanted})
    followed = [r for r in requests if wanted is None or (r.namespace, r.name) in wanted]
    if followed:
        rows = _rows(followed, templates=False) | _rows(followed, templates=True)
        positions = {
            False: _Position.of(Kind.RESOURCE_CLAIMS),
            True: _Position.of(Kind.RESOURCE_CLAIM_TEMPLATES),
        }
        mirrored = _mirrored_devices(followed, rows)
        now = timezone.now()
        for request in followed:
            row = rows.get((request.namespace, request.name))
            if row is not None and request.claim_uid and row.uid != request.claim_uid:
                row = None  # the name now belongs to another object: ours is gone
            if row is None:
                counts["gone"] += _end_if_gone(
                    request, positions[request.is_template], now, confirm if backstop else None
                )
            elif not request.is_template:
                for change in _follow(request, row, mirrored.get(row.pk, set()), now, backstop):
                    counts[change] += 1
    _usage_changed(wanted)
    return counts


def _mirrored_devices(
    requests: Sequence[ClaimRequest], rows: dict[tuple[str, str], _Row]
) -> dict[int, set[DeviceKey]]:
    """Per mirrored claim of a reservation: the devices its allocation names."""
    claim_ids = [
        row.pk
        for request in requests
        if request.mode == AllocationMode.RESERVATION and not request.is_template
        for row in [rows.get((request.namespace, request.name))]
        if row is not None and row.is_allocated
    ]
    devices: dict[int, set[DeviceKey]] = {}
    for claim_id, driver, pool, device in AllocatedDevice.objects.filter(
        claim_id__in=claim_ids
    ).values_list("claim_id", "driver", "pool", "device_name"):
        devices.setdefault(claim_id, set()).add((driver, pool, device))
    return devices


def _end_if_gone(
    request: ClaimRequest, position: _Position | None, now: datetime, confirm: Confirm | None
) -> int:
    reason = why_gone(request, position)
    if not reason and confirm is not None and _quiet(request, now):
        reason = confirm(request)
    if not reason:
        return 0
    return int(transition(request, Move.GONE, reason=reason))


def _quiet(request: ClaimRequest, now: datetime) -> bool:
    """Left alone by the portal for ``MIRROR_GRACE``: whatever the cluster shows now is not
    the portal's own write still on its way."""
    since = max(filter(None, (request.applied_at, request.updated_at)), default=None)
    return since is not None and now - since > MIRROR_GRACE


def _cleared_for_a_while(request: ClaimRequest, row: _Row, now: datetime) -> bool:
    """The claim has been without an allocation for ``MIRROR_GRACE``: kube-scheduler, which
    clears a reservation to allocate it where a pod fits, did not allocate it again."""
    cleared = AllocationRecord.objects.filter(claim_uid=row.uid).aggregate(at=Max("ended_at"))
    if cleared["at"] is None:
        return _quiet(request, now)
    return bool(now - cleared["at"] > MIRROR_GRACE)


def _follow(
    request: ClaimRequest, row: _Row, devices: set[DeviceKey], now: datetime, backstop: bool
) -> list[str]:
    """What following one mirrored claim changed on its request."""
    changed = []
    if request.mode == AllocationMode.RESERVATION and request.allocation:
        # Only what happened after the portal's own last write counts (its own moves write a
        # new version first).
        caught_up = not request.claim_version or not is_newer(
            request.claim_version, row.resource_version
        )
        if row.is_allocated:
            replaced = caught_up and devices != _keys(request.allocation)
        else:
            replaced = caught_up and backstop and _cleared_for_a_while(request, row, now)
        if replaced and _move(request, row):
            changed.append("moved")
    if row.consumers and request.state == State.APPLIED:
        move = Move.START_USE
    elif not row.consumers and request.state == State.IN_USE:
        move = Move.END_USE
    else:
        return changed
    if transition(request, move):
        changed.append(move.target)
    return changed


def _describe(allocation: dict[str, Any] | None) -> dict[str, Any]:
    return {"devices": sorted(list(key) for key in _keys(allocation)), "node": node_of(allocation)}


def _summary(before: dict[str, Any], after: dict[str, Any]) -> str:
    def text(side: dict[str, Any]) -> str:
        if not side["devices"]:
            return "nothing (the allocation was cleared)"
        names = ", ".join(device for _, _, device in side["devices"])
        return f"{names} on {side['node']}" if side["node"] else names

    return (
        f"the cluster moved the claim from {text(before)} to {text(after)}: the portal's "
        "reservation was replaced (kube-scheduler deallocates a claim no pod reserves when a "
        "pod using it cannot be scheduled, then allocates it again)"
    )


def _move(request: ClaimRequest, row: _Row) -> bool:
    """The request takes the claim's allocation as mirrored; a conflict recorded and audited,
    and the owner told (``claims.signals.claim_moved``). False if the request changed
    meanwhile (the next batch or beat looks again)."""
    allocation = (
        ResourceClaim.objects.filter(pk=row.pk).values_list("raw__status__allocation", flat=True)
    ).first()
    allocation = allocation if isinstance(allocation, dict) and row.is_allocated else None
    before, after = _describe(request.allocation), _describe(allocation)
    with transaction.atomic():
        moved = ClaimRequest.objects.filter(
            pk=request.pk, state__in=FOLLOWED, updated_at=request.updated_at
        ).update(
            allocation=allocation,
            node_name=after["node"],
            claim_version=row.resource_version,
            conflicts=F("conflicts") + 1,
            updated_at=timezone.now(),
        )
        if not moved:
            return False
        old = request.allocation
        request.refresh_from_db()
        summary = _summary(before, after)
        record_event(
            actor=None,
            action=AuditEvent.Action.CLAIM_CONFLICT,
            obj=request,
            tenant=request.tenant,
            before={**before, "allocation": old},
            after={
                **after,
                "allocation": allocation,
                "resolved": "followed the cluster",
                "resource_version": row.resource_version,
                "summary": summary,
            },
        )
        claim_moved.send(sender=ClaimRequest, request=request, before=before, after=after)
    log.warning("request %s (%s): %s", request.pk, request, summary)
    return True


def _usage_changed(wanted: set[tuple[str, str]] | None) -> None:
    """Tells the tenants owning the changed claims' namespaces (all, after a relist) that their
    usage may have changed."""
    if wanted is None:
        tenant_ids = None
    else:
        tenant_ids = sorted(
            set(
                TenantNamespace.objects.filter(
                    name__in={namespace for namespace, _ in wanted}
                ).values_list("tenant_id", flat=True)
            )
        )
        if not tenant_ids:
            return
    tenant_usage_changed.send(sender=ResourceClaim, tenant_ids=tenant_ids)


@shared_task(name="claims.follow_claims", ignore_result=True)
def follow_claims(names: list[list[str]] | None = None) -> dict[str, int]:
    """After a batch of mirrored claim changes (on commit): their requests follow them."""
    return follow_requests(names)


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
            found = cluster.find(kind, request.name, request.namespace)
            identity = cluster.identity() if found is None else ""
    except ClusterError:
        return ""
    if found is not None:
        uid = str((found.get("metadata") or {}).get("uid") or "")
        return CLAIM_DELETED_REASON if request.claim_uid and uid != request.claim_uid else ""
    if request.cluster_uid and identity and identity != request.cluster_uid:
        return CLUSTER_REPLACED_REASON
    return CLAIM_DELETED_REASON


def follow_applied(sender: Any, request: ClaimRequest, **kwargs: Any) -> None:
    """Receiver of ``claims.signals.request_applied``: the mirror may have shown the claim
    (even a pod using it) before the portal wrote it."""
    follow_requests([(request.namespace, request.name)])
