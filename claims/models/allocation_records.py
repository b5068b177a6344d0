"""AllocationRecord: the append-only history of which device each claim held, and when.

The mirror keeps only the present (a claim's rows go when the claim goes); chargeback needs the
past. One record per allocated device of a claim, opened when the mirror first sees the claim
allocated and closed (``ended_at``) when the claim is deallocated, deleted, or missing from a
relist. The mirror keeps them in step in the same transaction as the claim rows it writes
(``mirror.store``); ``manage.py backfill_allocation_records`` reconciles them with the mirror
once, e.g. after upgrading to a version that has them.

Records copy what a report needs (namespace, tenant name and slug, device class, model, memory)
so that they still report after the claim, the device or the tenant is gone.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, Self

from django.db import models
from django.db.models import OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from claims.models.resource_claims import AllocatedDevice, ResourceClaim
from devices.models import Device
from portal.models import Tenant
from toolkit.querysets import VisibleQuerySet

if TYPE_CHECKING:
    from django.contrib.auth.models import User

__all__ = [
    "AllocationRecord",
    "AllocationRecordQuerySet",
    "ClaimFacts",
    "request_device_classes",
]


class ClaimFacts(NamedTuple):
    """What a claim's records copy from it: read from the mirror, or from the object the
    mirror has just written."""

    uid: str
    namespace: str
    name: str
    tenant_id: int | None
    spec: Any
    allocated_at: Any  # ``status.allocation.allocationTimestamp`` as the object holds it


# The identity of one record within its claim: the same device under the same request.
RecordKey = tuple[str, str, str, str]  # request, driver, pool, device name


def request_device_classes(spec: Any) -> dict[str, str]:
    """Device class per request name of a claim spec, with ``firstAvailable`` alternatives as
    ``request/subrequest`` — the names allocation results carry (as ``claims.requests.quota`` reads
    them). Tolerant: whatever is unreadable maps to nothing."""
    classes: dict[str, str] = {}
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for request in requests if isinstance(requests, list) else []:
        if not isinstance(request, dict) or not isinstance(request.get("name"), str):
            continue
        exactly = request.get("exactly")
        if isinstance(exactly, dict):
            classes[request["name"]] = str(exactly.get("deviceClassName") or "")
        alternatives = request.get("firstAvailable")
        for option in alternatives if isinstance(alternatives, list) else []:
            if isinstance(option, dict) and isinstance(option.get("name"), str):
                name = f"{request['name']}/{option['name']}"
                classes[name] = str(option.get("deviceClassName") or "")
    return classes


def _allocated_at(value: Any, now: datetime.datetime) -> datetime.datetime:
    """``status.allocation.allocationTimestamp`` if readable and not in the future, else now."""
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None or timezone.is_naive(parsed):
        return now
    return min(parsed, now)


class AllocationRecordQuerySet(VisibleQuerySet["AllocationRecord"]):
    def visible_to_member(self, user: User) -> Self:
        """Portal admins see every record (those of deleted or no tenants too); others the
        records of their tenants — members included: chargeback is for the whole team."""
        return self.filter(tenant__in=Tenant.objects.visible_to(user))

    def open(self) -> AllocationRecordQuerySet:
        return self.filter(ended_at__isnull=True)

    def charged(self) -> AllocationRecordQuerySet:
        """Records that hold their device: admin-access results only observe one, and count
        neither against quota nor in reports."""
        return self.filter(admin_access=False)

    def overlapping(
        self, start: datetime.datetime, end: datetime.datetime
    ) -> AllocationRecordQuerySet:
        """Records held at some moment of ``[start, end)``."""
        return self.filter(Q(ended_at__isnull=True) | Q(ended_at__gt=start), started_at__lt=end)

    # -- kept by the mirror (call inside the transaction that writes the claim rows) --------

    def record_claims(
        # ``self`` spelt out: django-stubs leave a queryset's own ``self`` generic in its model,
        # which ``bulk_create`` below could not take records for.
        self: AllocationRecordQuerySet,
        uids: Iterable[str],
        *,
        now: datetime.datetime | None = None,
    ) -> tuple[int, int]:
        """Brings the open records of the claims ``uids`` in line with their mirrored
        allocation results: opens one for each held device that has none, closes (at ``now``)
        those whose device the claim no longer holds (deallocated, reallocated, or gone).
        Idempotent: a replayed event or a relist opens nothing twice. Returns (opened, closed).
        Three reads and at most two writes whatever the number of claims."""
        uids = list(set(uids))
        if not uids:
            return 0, 0
        now = now or timezone.now()
        claims = {
            pk: ClaimFacts(uid, namespace, name, tenant_id, spec, allocated_at)
            for pk, uid, namespace, name, tenant_id, spec, allocated_at in (
                ResourceClaim.objects.filter(uid__in=uids, is_allocated=True).values_list(
                    "pk",
                    "uid",
                    "namespace",
                    "name",
                    "tenant_id",
                    "raw__spec",
                    "raw__status__allocation__allocationTimestamp",
                )
            )
        }
        opened, stale = self.plan(uids, claims, now=now)
        closed = self.filter(pk__in=stale).update(ended_at=now) if stale else 0
        # A concurrent writer (the backfill beside a watcher) may have opened one meanwhile.
        self.bulk_create([AllocationRecord(**row) for row in opened], ignore_conflicts=True)
        return len(opened), closed

    def plan(
        self,
        uids: list[str],
        claims: dict[int, ClaimFacts],
        *,
        now: datetime.datetime,
    ) -> tuple[list[dict[str, Any]], list[int]]:
        """What :meth:`record_claims` writes for the claims ``uids``, of which ``claims`` (by
        primary key) are those mirrored allocated, with their allocation results as stored:
        the records to open (as field values) and the primary keys of the open records to
        close. Two reads. The mirror's store calls it with the facts of the claims it has
        just written (no need to read their JSON back) and writes the rows its own way."""
        tenants = {
            pk: (name, slug)
            for pk, name, slug in Tenant.objects.filter(
                pk__in={claim.tenant_id for claim in claims.values() if claim.tenant_id}
            ).values_list("pk", "name", "slug")
        }
        wanted: dict[tuple[str, RecordKey], dict[str, Any]] = {}
        classes: dict[int, dict[str, str]] = {}
        for claim_id, request, driver, pool, device, admin_access, model, memory in (
            AllocatedDevice.objects.filter(claim_id__any=list(claims))
            .order_by("claim_id", "pk")
            .values_list(
                "claim_id",
                "request",
                "driver",
                "pool",
                "device_name",
                "admin_access",
                "device__model_name",
                "device__memory_bytes",
            )
        ):
            claim = claims[claim_id]
            if claim_id not in classes:
                classes[claim_id] = request_device_classes(claim.spec)
            tenant_name, tenant_slug = tenants.get(claim.tenant_id or 0, ("", ""))
            wanted.setdefault(
                (claim.uid, (request, driver, pool, device)),
                {
                    "claim_uid": claim.uid,
                    "namespace": claim.namespace,
                    "claim_name": claim.name,
                    "tenant_id": claim.tenant_id,
                    "tenant_name": tenant_name,
                    "tenant_slug": tenant_slug,
                    "request": request,
                    "device_class": classes[claim_id].get(request, "")[:253],
                    "driver": driver,
                    "pool": pool,
                    "device_name": device,
                    "model_name": model or "",
                    "memory_bytes": memory or 0,
                    "admin_access": admin_access,
                    "started_at": _allocated_at(claim.allocated_at, now),
                },
            )
        stale = []
        for pk, uid, *key in self.filter(claim_uid__any=uids, ended_at__isnull=True).values_list(
            "pk", "claim_uid", "request", "driver", "pool", "device_name"
        ):
            if wanted.pop((uid, (key[0], key[1], key[2], key[3])), None) is None:
                stale.append(pk)
        return list(wanted.values()), stale

    def close_claims(self, uids: Iterable[str], *, now: datetime.datetime | None = None) -> int:
        """Closes (at ``now``) the open records of the claims ``uids`` (deleted, or missing from
        a relist). Idempotent."""
        uids = list(uids)
        if not uids:
            return 0
        return self.filter(claim_uid__any=uids, ended_at__isnull=True).update(
            ended_at=now or timezone.now()
        )

    def reconcile(
        self, *, now: datetime.datetime | None = None, chunk: int = 2000
    ) -> tuple[int, int]:
        """Brings every open record in line with the mirror: opens records for allocated claims
        that have none (the backfill after an upgrade), closes those of claims the mirror no
        longer holds or no longer shows allocated. Idempotent. Returns (opened, closed)."""
        now = now or timezone.now()
        opened = closed = 0
        mirrored = list(ResourceClaim.objects.order_by("pk").values_list("uid", flat=True))
        for start in range(0, len(mirrored), chunk):
            more_opened, more_closed = self.record_claims(mirrored[start : start + chunk], now=now)
            opened, closed = opened + more_opened, closed + more_closed
        gone = set(self.open().values_list("claim_uid", flat=True)) - set(mirrored)
        closed += self.close_claims(gone, now=now)
        return opened, closed

    def describe_devices(self, drivers: Iterable[str], pools: Iterable[str]) -> int:
        """Fills in the model and memory of open records in these pools that opened before the
        mirror held their device (a claim mirrored before its slice). Call after the slices'
        devices are written."""
        newest = Device.objects.filter(
            driver=OuterRef("driver"), pool_name=OuterRef("pool"), name=OuterRef("device_name")
        ).order_by("-resource_slice__pool_generation", "pk")
        return self.filter(
            driver__in=list(set(drivers)),
            pool__in=list(set(pools)),
            ended_at__isnull=True,
            model_name="",
            memory_bytes=0,
        ).update(
            model_name=Coalesce(Subquery(newest.values("model_name")[:1]), models.Value("")),
            memory_bytes=Coalesce(Subquery(newest.values("memory_bytes")[:1]), models.Value(0)),
        )


class AllocationRecord(models.Model):
    """One device one claim held from ``started_at`` to ``ended_at`` (null while held).

    ``started_at`` is the claim's ``allocationTimestamp`` when the allocation carries one, else
    the moment the mirror first saw the claim allocated. ``tenant`` is the tenant owning the
    namespace at that time; its name and slug are copied so that a deleted tenant still reports.
    """

    claim_uid = models.CharField(max_length=64)
    namespace = models.CharField(max_length=63)
    claim_name = models.CharField(max_length=253)
    tenant = models.ForeignKey(
        Tenant,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="allocation_records",
    )
    tenant_name = models.CharField(max_length=100, blank=True)
    tenant_slug = models.CharField(max_length=63, blank=True)
    request = models.CharField(max_length=130)  # "<request>" or "<request>/<subrequest>"
    device_class = models.CharField(max_length=253, blank=True)
    driver = models.CharField(max_length=63)
    pool = models.CharField(max_length=253)
    device_name = models.CharField(max_length=63)
    model_name = models.CharField(max_length=200, blank=True)
    memory_bytes = models.BigIntegerField(default=0)
    admin_access = models.BooleanField(default=False)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)

    objects = AllocationRecordQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at", "pk"]
        constraints = [
            # The mirror's idempotency, enforced: one open record per claim and device.
            models.UniqueConstraint(
                fields=["claim_uid", "request", "driver", "pool", "device_name"],
                condition=Q(ended_at__isnull=True),
                name="one_open_record_per_claim_device",
            )
        ]
        indexes = [
            models.Index(fields=["claim_uid", "ended_at"]),
            models.Index(fields=["started_at"]),
            models.Index(fields=["ended_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.claim_name}: {self.pool}/{self.device_name}"

    @property
    def is_open(self) -> bool:
        return self.ended_at is None
