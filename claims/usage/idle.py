"""Idle claims: allocated claims nothing uses (``docs/idle.md``).

A claim is idle when, for at least its tenant's limits (``portal.IdlePolicy``, else the
``IDLE_*`` settings), either

* it has been allocated with no consumer in ``status.reservedFor`` (``NO_CONSUMER``), or
* its devices' GPU utilisation stayed under the threshold in every 5-minute bucket of the
  window, read from the claim's usage rollups (``LOW_UTILISATION``). A claim without readings
  for most of the window is *unknown*, never idle by utilisation; an adminAccess claim only
  observes its devices and is never idle by utilisation.

The sweep (:func:`sweep_idle_claims`, Celery beat) keeps one ``ClaimIdleness`` row per
allocated claim with a constant number of queries whatever the number of claims, flags and
unflags idempotently (running it twice changes nothing), records each flag and unflag in the
audit trail, and sends ``claims_flagged_idle`` for the claims whose owners were not yet told of
this idle episode. Deleting claims is the mirror's part (``claims.lifecycle.idle_reclaim``).
"""

from __future__ import annotations

import datetime
import logging
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q, Sum
from django.utils import timezone

from claims.models import (
    AllocatedDevice,
    ClaimIdleness,
    ClaimRequest,
    ResourceClaim,
    UsageRollup,
)
from claims.signals import claims_flagged_idle
from devices.models import Resolution
from portal.models import AuditEvent, EffectiveIdlePolicy, IdlePolicy

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

__all__ = [
    "IDLE_RECLAIM_REASON",
    "MIN_COVERAGE",
    "IdleSummary",
    "claim_owner",
    "idle_claim_count",
    "sweep_idle_claims",
]

log = logging.getLogger(__name__)
Reason = ClaimIdleness.Reason
_BUCKET = datetime.timedelta(seconds=Resolution.FIVE_MINUTES.seconds)
# The reason a portal request ends with when its claim is reclaimed for being idle.
IDLE_RECLAIM_REASON = "reclaimed: idle past its grace period"
# Share of the window's 5-minute buckets that need a reading before low utilisation counts:
# rollups close a bucket or two behind the clock, and a gap in telemetry is not "unused".
MIN_COVERAGE = 0.75
# The fields the sweep writes (all of them but the claim and the notification mark).
_FIELDS = [
    "unused_since",
    "reason",
    "idle_since",
    "low_since",
    "threshold",
    "utilisation",
    "episode",
    "reclaim_at",
    "checked_at",
]


@dataclass(frozen=True, slots=True)
class _Claim:
    pk: int
    uid: str
    namespace: str
    name: str
    tenant_id: int | None
    consumer_count: int
    mirrored_at: datetime.datetime
    is_deleting: bool
    observes: bool  # has an adminAccess result


@dataclass(slots=True)
class _Row:
    """A ``ClaimIdleness`` row as the sweep reads and changes it (model instances for tens of
    thousands of rows would cost the sweep more than its queries do)."""

    claim_id: int
    unused_since: datetime.datetime | None = None
    reason: str = ""
    idle_since: datetime.datetime | None = None
    low_since: datetime.datetime | None = None
    threshold: int | None = None
    utilisation: float | None = None
    episode: int = 0
    reclaim_at: datetime.datetime | None = None
    notified_episode: int = 0

    @property
    def is_idle(self) -> bool:
        return bool(self.reason)

    def snapshot(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in _FIELDS if name != "checked_at")

    def as_model(self, now: datetime.datetime) -> ClaimIdleness:
        """An unsaved row for the upsert (keyed by claim: the sweep's fields are written,
        ``notified_episode`` and ``reclaimed_at`` only on insert)."""
        values = {name: getattr(self, name) for name in _FIELDS if name != "checked_at"}
        return ClaimIdleness(claim_id=self.claim_id, checked_at=now, **values)


@dataclass(slots=True)
class IdleSummary:
    flagged: int = 0
    unflagged: int = 0
    idle: int = 0
    to_notify: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "flagged": self.flagged,
            "unflagged": self.unflagged,
            "idle": self.idle,
            "to_notify": self.to_notify,
        }


def _low_utilisation(
    groups: dict[tuple[int, datetime.timedelta], set[str]], now: datetime.datetime
) -> dict[str, float]:
    """Claim uid → its average utilisation over the window, for the claims of ``groups``
    ((threshold, window) → uids) under the threshold in every bucket of the window that has
    a reading, with readings for ``MIN_COVERAGE`` of it. One query per distinct policy."""
    low: dict[str, float] = {}
    for (threshold, window), uids in groups.items():
        if not uids:
            continue
        # A count of buckets: it reaches the fraction exactly when it reaches its ceiling.
        needed = math.ceil(MIN_COVERAGE * window / _BUCKET)
        rows = (
            UsageRollup.objects.filter(
                scope=UsageRollup.Scope.CLAIM,
                resolution=Resolution.FIVE_MINUTES,
                bucket_start__gte=now - window,
                bucket_start__lt=now,
                gpu_util_avg__isnull=False,
            )
            .order_by()
            .values("key")
            .annotate(
                buckets=Count("pk"),
                high=Count("pk", filter=Q(gpu_util_avg__gte=threshold)),
                weighted=Sum(F("gpu_util_avg") * F("device_seconds")),
                seconds=Sum("device_seconds"),
            )
            .filter(high=0, buckets__gte=needed)
            .values_list("key", "weighted", "seconds")
        )
        for key, weighted, seconds in rows:
            if key in uids:
                low[key] = round(weighted / seconds, 1) if seconds else 0.0
    return low


def _audit(claim: _Claim, action: AuditEvent.Action, **after: Any) -> AuditEvent:
    return AuditEvent(
        action=action,
        tenant_id=claim.tenant_id,
        object_type=ResourceClaim._meta.label,
        object_id=str(claim.pk),
        object_repr=f"{claim.namespace}/{claim.name}",
        after={
            key: value.isoformat() if hasattr(value, "isoformat") else value
            for key, value in after.items()
        },
    )


def _next_state(
    claim: _Claim,
    row: _Row,
    policy: EffectiveIdlePolicy,
    low: dict[str, float],
    now: datetime.datetime,
) -> None:
    """Moves ``row`` (in place) to what the sweep sees now."""
    if claim.consumer_count:
        row.unused_since = None
    elif row.unused_since is None:
        # First seen unused: the mirror wrote the change that emptied reservedFor at or
        # before its last write of the row, so that is a safe (late) start.
        row.unused_since = min(claim.mirrored_at, now)
    if row.unused_since is not None and now - row.unused_since >= policy.no_consumer_after:
        reason = Reason.NO_CONSUMER
    elif not claim.observes and claim.uid in low:
        reason = Reason.LOW_UTILISATION
    else:
        reason = Reason.NOT_IDLE
    if reason and not row.reason:
        row.episode += 1
        row.idle_since = now
    elif not reason:
        row.idle_since = None
    if reason == Reason.LOW_UTILISATION:
        row.threshold = policy.utilisation_threshold
        row.utilisation = low[claim.uid]
        if row.reason != Reason.LOW_UTILISATION or row.low_since is None:
            row.low_since = now - policy.low_utilisation_after
    else:
        row.threshold = row.utilisation = row.low_since = None
    row.reason = reason
    row.reclaim_at = (
        row.idle_since + policy.grace_period
        if reason and policy.reclaim and row.idle_since is not None
        else None
    )


@transaction.atomic
def sweep_idle_claims(now: datetime.datetime | None = None) -> IdleSummary:
    """Flags and unflags idle claims (see the module's docstring); safe to run twice. At most
    eight queries plus one per distinct utilisation policy, whatever the number of claims."""
    now = now or timezone.now()
    defaults = EffectiveIdlePolicy.defaults()
    policies = IdlePolicy.objects.effective()
    observer = AllocatedDevice.objects.filter(claim=OuterRef("pk"), admin_access=True)
    claims = [
        _Claim(*values)
        for values in ResourceClaim.objects.allocated()
        .annotate(observes=Exists(observer))
        .order_by()
        .values_list(
            "pk",
            "uid",
            "namespace",
            "name",
            "tenant_id",
            "consumer_count",
            "mirrored_at",
            "is_deleting",
            "observes",
        )
    ]
    rows = {
        values[0]: _Row(*values)
        for values in ClaimIdleness.objects.order_by().values_list(
            "claim_id", *(name for name in _FIELDS if name != "checked_at"), "notified_episode"
        )
    }
    groups: dict[tuple[int, datetime.timedelta], set[str]] = defaultdict(set)
    for claim in claims:
        policy = policies.get(claim.tenant_id or 0, defaults)
        if not claim.observes and not claim.is_deleting:
            groups[(policy.utilisation_threshold, policy.low_utilisation_after)].add(claim.uid)
    low = _low_utilisation(groups, now)

    summary = IdleSummary()
    changed: list[ClaimIdleness] = []
    events: list[AuditEvent] = []
    to_notify: list[int] = []
    for claim in claims:
        row = rows.pop(claim.pk, None)
        if claim.is_deleting:
            continue  # being deleted (perhaps reclaimed): its row stays as it is
        is_new = row is None
        if row is None:
            row = _Row(claim_id=claim.pk)
        before, was_idle = row.snapshot(), row.is_idle
        policy = policies.get(claim.tenant_id or 0, defaults)
        _next_state(claim, row, policy, low, now)
        if is_new or row.snapshot() != before:
            changed.append(row.as_model(now))
        if row.is_idle and not was_idle:
            summary.flagged += 1
            log.info("Claim %s/%s is idle: %s", claim.namespace, claim.name, row.reason)
            events.append(
                _audit(
                    claim,
                    AuditEvent.Action.CLAIM_IDLE,
                    reason=row.reason,
                    idle_since=row.idle_since,
                    unused_since=row.unused_since,
                    threshold=row.threshold,
                    utilisation=row.utilisation,
                    reclaim_at=row.reclaim_at,
                    episode=row.episode,
                )
            )
        elif was_idle and not row.is_idle:
            summary.unflagged += 1
            events.append(_audit(claim, AuditEvent.Action.CLAIM_ACTIVE, episode=row.episode))
        if row.is_idle:
            summary.idle += 1
            if row.notified_episode < row.episode:
                to_notify.append(claim.pk)

    # What is left was an allocated claim and is not any more (deallocated or deleted).
    gone = {pk: row for pk, row in rows.items() if row.is_idle}
    if gone:
        for claim_id, name, namespace, tenant_id in ResourceClaim.objects.filter(
            pk__in=list(gone)
        ).values_list("pk", "name", "namespace", "tenant_id"):
            summary.unflagged += 1
            claim = _Claim(claim_id, "", namespace, name, tenant_id, 0, now, False, False)
            events.append(
                _audit(
                    claim,
                    AuditEvent.Action.CLAIM_ACTIVE,
                    episode=gone[claim_id].episode,
                    deallocated=True,
                )
            )
    if rows:
        ClaimIdleness.objects.filter(claim_id__in=list(rows)).delete()
    if changed:
        ClaimIdleness.objects.bulk_create(
            changed,
            batch_size=2000,
            update_conflicts=True,
            unique_fields=["claim"],
            update_fields=_FIELDS,
        )
    if events:
        AuditEvent.objects.bulk_create(events, batch_size=2000)
    if to_notify:
        summary.to_notify = len(to_notify)
        claims_flagged_idle.send(sender=ClaimIdleness, claim_ids=to_notify)
    return summary


def idle_claim_count(user: User | AnonymousUser) -> int:
    """How many idle claims ``user`` may see (the dashboard's count; one query)."""
    return ResourceClaim.objects.visible_to(user).idle().count()


def claim_owner(claim: ResourceClaim) -> User | None:
    """Who asked for the claim: the requester of the portal request that made it (the claim
    carries the request's id as a label); None for claims made outside the portal."""
    request_id = ClaimRequest.request_id_in(claim.labels)
    if request_id is None:
        return None
    request = (
        ClaimRequest.objects.select_related("requested_by")
        .filter(pk=request_id, namespace=claim.namespace, name=claim.name)
        .first()
    )
    return request.requested_by if request is not None else None
