"""The rows a claim brings besides its own: allocation results, consumers, the tenant owning
its namespace, and its allocation history, as the mirror's store writes them (``mirror.store``
calls these inside its transaction)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from claims.models import (
    AllocatedDevice,
    AllocationRecord,
    ClaimConsumer,
    ClaimFacts,
)
from mirror.bulk import BulkWriter
from mirror.mapping import Mapped
from mirror.states import DeviceKey
from portal.models import TenantNamespace

__all__ = [
    "ALLOCATED_DEVICE_FIELDS",
    "CONSUMER_FIELDS",
    "record_allocations",
    "replace_claim_children",
    "set_tenants",
]

ALLOCATED_DEVICE_FIELDS = [
    "request",
    "device_class_name",
    "driver",
    "pool",
    "device_name",
    "admin_access",
    "share_id",
    "consumed_capacity",
]
CONSUMER_FIELDS = ["api_group", "resource", "name", "uid"]


def set_tenants(rows: dict[str, dict[str, Any]]) -> None:
    """Sets each claim row's ``tenant_id``: the tenant owning its namespace, or None."""
    owners = dict(
        TenantNamespace.objects.filter(
            name__any={row["namespace"] for row in rows.values()}
        ).values_list("name", "tenant_id")
    )
    for row in rows.values():
        row["tenant_id"] = owners.get(row["namespace"])


def replace_claim_children(
    keyed: dict[str, Mapped], stored: dict[str, tuple[int, str]]
) -> tuple[set[str], set[DeviceKey]]:
    """Allocated devices and consumers are replaced where they changed: deleted here, written
    by ``mirror.store._insert_claim_children`` once the claims' rows are.

    ``stored``: uid → (primary key, children digest) of the claims already mirrored, as read
    before this batch writes their rows. Most claim updates touch only metadata (labels,
    annotations, finalizers): a stored claim whose children digest (``mirror.mapping``) is
    the one just mapped keeps its rows, which saves reading them, a delete and an insert per
    claim. Returns the uids of the claims whose rows were replaced (new claims included), and
    the devices named by the replaced rows, before and after: their state may change.
    """
    replace = set(keyed) - set(stored)
    touched: set[DeviceKey] = set()
    if stored:
        changed = [
            uid
            for uid, (_, digest) in stored.items()
            if not keyed[uid].fields["children_digest"]
            or digest != keyed[uid].fields["children_digest"]
        ]
        replace.update(changed)
        claim_ids = [stored[uid][0] for uid in changed]
        if claim_ids:
            touched |= set(
                AllocatedDevice.objects.filter(claim_id__any=claim_ids).values_list(
                    "driver", "pool", "device_name"
                )
            )
            AllocatedDevice.objects.filter(claim_id__any=claim_ids).delete()
            ClaimConsumer.objects.filter(claim_id__any=claim_ids).delete()
    return replace, touched


RECORD_FIELDS = [
    "claim_uid",
    "namespace",
    "claim_name",
    "tenant_id",
    "tenant_name",
    "tenant_slug",
    "request",
    "device_class",
    "driver",
    "pool",
    "device_name",
    "model_name",
    "memory_bytes",
    "admin_access",
    "started_at",
]


def record_allocations(
    writer: BulkWriter, uids: set[str], rows: dict[str, dict[str, Any]], pks: dict[str, int]
) -> None:
    """``AllocationRecord.objects.record_claims`` for claims this batch has just written, from
    their rows in memory: their JSON is not read back, and new records go through ``COPY``."""
    if not uids:
        return
    now = timezone.now()
    facts = {}
    for uid in uids:
        row = rows[uid]
        if not row["is_allocated"]:
            continue
        raw = row["raw"] if isinstance(row["raw"], dict) else {}
        allocation = (raw.get("status") or {}).get("allocation")
        facts[pks[uid]] = ClaimFacts(
            uid,
            row["namespace"],
            row["name"],
            row.get("tenant_id"),
            raw.get("spec"),
            allocation.get("allocationTimestamp") if isinstance(allocation, dict) else None,
        )
    opened, stale = AllocationRecord.objects.plan(sorted(uids), facts, now=now)
    if stale:
        AllocationRecord.objects.filter(pk__in=stale).update(ended_at=now)
    # A concurrent writer (the backfill beside a watcher) may have opened one meanwhile.
    writer.insert_new(AllocationRecord, RECORD_FIELDS, opened)
