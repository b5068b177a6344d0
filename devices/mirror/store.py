"""Writing mapped objects to the database: idempotent, batched, and silent when nothing changed.

Rows are keyed by the object's uid. An event whose resourceVersion equals the stored one, or
is older than it, changes nothing, so replaying a batch after a crash or a relist that overlaps
a watch is harmless. Device rows keep their primary keys across slice updates (upsert on
slice + device name), so device URLs stay stable while the driver republishes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import models, transaction

from claims.models import AllocatedDevice, ClaimConsumer, ResourceClaim, ResourceClaimTemplate
from devices.cluster import Kind
from devices.mirror.mapping import Mapped, map_object
from devices.models import (
    Device,
    DeviceClass,
    Namespace,
    Node,
    Pod,
    ResourceSlice,
    SharedCounterSet,
)

__all__ = [
    "MODELS",
    "Applied",
    "apply_events",
    "delete_missing",
    "is_newer",
    "load",
    "stored_versions",
    "upsert",
]

MODELS: dict[Kind, type[models.Model]] = {
    Kind.NAMESPACES: Namespace,
    Kind.NODES: Node,
    Kind.DEVICE_CLASSES: DeviceClass,
    Kind.RESOURCE_SLICES: ResourceSlice,
    Kind.RESOURCE_CLAIM_TEMPLATES: ResourceClaimTemplate,
    Kind.RESOURCE_CLAIMS: ResourceClaim,
    Kind.PODS: Pod,
}
BATCH = 1000

DEVICE_FIELDS = [
    "driver",
    "pool_name",
    "node_name",
    "attributes",
    "capacity",
    "consumes_counters",
    "taints",
    "is_tainted",
    "allow_multiple_allocations",
    "device_type",
    "model_name",
    "uuid",
    "parent_uuid",
    "pci_bus_id",
    "pcie_root",
    "memory_bytes",
    "raw",
]


@dataclass
class Applied:
    """What one call wrote: rows created or changed, rows deleted, malformed objects seen."""

    written: int = 0
    deleted: int = 0
    malformed: int = 0

    def __iadd__(self, other: Applied) -> Applied:
        self.written += other.written
        self.deleted += other.deleted
        self.malformed += other.malformed
        return self


def _version(value: str) -> int | None:
    return int(value) if value.isdigit() else None


def is_newer(incoming: str, stored: str | None) -> bool:
    """Whether an object at ``incoming`` should replace the stored row at ``stored``.

    resourceVersions are opaque to clients, but every API server (and our emulator) issues
    increasing integers; when both are integers an older event is ignored, otherwise any
    different version wins.
    """
    if stored is None:
        return True
    if incoming == stored:
        return False
    new, old = _version(incoming), _version(stored)
    return new is None or old is None or new > old


def stored_versions(kind: Kind, uids: Iterable[str] | None = None) -> dict[str, str]:
    """uid → resourceVersion of the stored rows (all of them, or those with ``uids``)."""
    queryset = MODELS[kind].objects.all()
    if uids is not None:
        queryset = queryset.filter(uid__in=list(uids))
    return dict(queryset.values_list("uid", "resource_version"))


def _model_fields(model: type[models.Model]) -> list[str]:
    return [
        f.name
        for f in model._meta.concrete_fields
        if not f.primary_key and f.name not in ("uid", "mirrored_at")
    ]


def upsert(kind: Kind, mapped: list[Mapped]) -> Applied:
    """Creates or replaces the rows of already-mapped objects (children included).

    Call inside a transaction. Objects without a uid cannot be keyed and are skipped (they are
    counted as malformed).
    """
    model = MODELS[kind]
    applied = Applied(malformed=sum(1 for m in mapped if m.problems))
    keyed = {m.fields["uid"]: m for m in mapped if m.fields.get("uid")}
    if not keyed:
        return applied
    if kind in (Kind.RESOURCE_CLAIMS, Kind.RESOURCE_CLAIM_TEMPLATES):
        # A name reused by a new object (delete + create missed during a relist) frees the name.
        stale = models.Q()
        for m in keyed.values():
            stale |= models.Q(namespace=m.fields["namespace"], name=m.fields["name"])
        model.objects.filter(stale).exclude(uid__in=list(keyed)).delete()
    rows = [model(**m.fields, problems=m.problems) for m in keyed.values()]
    update_fields = _model_fields(model)
    model.objects.bulk_create(
        rows,
        batch_size=BATCH,
        update_conflicts=True,
        unique_fields=["uid"],
        update_fields=update_fields,
    )
    pks = dict(model.objects.filter(uid__in=list(keyed)).values_list("uid", "pk"))
    if kind == Kind.RESOURCE_SLICES:
        _replace_slice_children(keyed, pks)
    elif kind == Kind.RESOURCE_CLAIMS:
        _replace_claim_children(keyed, pks)
    applied.written = len(rows)
    return applied


def _replace_slice_children(keyed: dict[str, Mapped], pks: dict[str, int]) -> None:
    devices = [
        Device(resource_slice_id=pks[uid], name=row["name"], **{f: row[f] for f in DEVICE_FIELDS})
        for uid, m in keyed.items()
        for row in m.children.get("devices", [])
    ]
    keep = models.Q()
    for uid, m in keyed.items():
        keep |= models.Q(resource_slice_id=pks[uid]) & ~models.Q(
            name__in=[row["name"] for row in m.children.get("devices", [])]
        )
    Device.objects.filter(keep).delete()
    Device.objects.bulk_create(
        devices,
        batch_size=BATCH,
        update_conflicts=True,
        unique_fields=["resource_slice", "name"],
        update_fields=DEVICE_FIELDS,
    )
    SharedCounterSet.objects.filter(resource_slice_id__in=pks.values()).delete()
    SharedCounterSet.objects.bulk_create(
        [
            SharedCounterSet(resource_slice_id=pks[uid], **row)
            for uid, m in keyed.items()
            for row in m.children.get("counter_sets", [])
        ],
        batch_size=BATCH,
    )


def _replace_claim_children(keyed: dict[str, Mapped], pks: dict[str, int]) -> None:
    claim_ids = list(pks.values())
    AllocatedDevice.objects.filter(claim_id__in=claim_ids).delete()
    ClaimConsumer.objects.filter(claim_id__in=claim_ids).delete()
    AllocatedDevice.objects.bulk_create(
        [
            AllocatedDevice(claim_id=pks[uid], **row)
            for uid, m in keyed.items()
            for row in m.children.get("allocated_devices", [])
        ],
        batch_size=BATCH,
    )
    ClaimConsumer.objects.bulk_create(
        [
            ClaimConsumer(claim_id=pks[uid], **row)
            for uid, m in keyed.items()
            for row in m.children.get("consumers", [])
        ],
        batch_size=BATCH,
    )


def apply_events(kind: Kind, events: list[dict[str, Any]]) -> Applied:
    """Applies a batch of watch events (ADDED / MODIFIED / DELETED) in one transaction.

    Later events for the same object win; stale and repeated events write nothing.
    """
    latest: dict[str, tuple[str, dict[str, Any]]] = {}
    unkeyed: list[Mapped] = []
    for event in events:
        obj = event.get("object")
        mapped = map_object(kind, obj)
        uid = mapped.fields.get("uid")
        if not uid:
            unkeyed.append(mapped)
            continue
        latest[uid] = (event.get("type", ""), obj if isinstance(obj, dict) else {})
    applied = Applied(malformed=sum(1 for m in unkeyed if m.problems))
    with transaction.atomic():
        stored = stored_versions(kind, latest)
        deleted = [uid for uid, (kind_, _) in latest.items() if kind_ == "DELETED"]
        if deleted:
            applied.deleted, _ = MODELS[kind].objects.filter(uid__in=deleted).delete()
            applied.deleted = min(applied.deleted, len(deleted))
        changed = [
            map_object(kind, obj)
            for uid, (type_, obj) in latest.items()
            if type_ != "DELETED"
            and is_newer(str(obj.get("metadata", {}).get("resourceVersion", "")), stored.get(uid))
        ]
        applied += upsert(kind, changed)
    return applied


def delete_missing(kind: Kind, seen_uids: set[str], list_version: str = "") -> int:
    """Deletes the rows of objects a complete relist (at ``list_version``) did not return.

    A row written from a watch event newer than the list is kept: the object was created
    after the list's snapshot.
    """
    model = MODELS[kind]
    listed_at = _version(list_version)
    gone = [
        uid
        for uid, version in model.objects.values_list("uid", "resource_version")
        if uid not in seen_uids and (listed_at is None or (_version(version) or 0) <= listed_at)
    ]
    deleted = 0
    for start in range(0, len(gone), BATCH):
        chunk = gone[start : start + BATCH]
        model.objects.filter(uid__in=chunk).delete()
        deleted += len(chunk)
    return deleted


def load(objects: Iterable[dict[str, Any]]) -> Applied:
    """Upserts objects of any mirrored kinds (by their ``kind`` field), e.g. a kubectl List's
    items. For tests and fixtures; the watchers use ``apply_events``."""
    by_kind: dict[Kind, list[Mapped]] = {}
    names = {model.__name__: kind for kind, model in MODELS.items()}
    for obj in objects:
        kind = names.get(str(obj.get("kind")))
        if kind is not None:
            by_kind.setdefault(kind, []).append(map_object(kind, obj))
    applied = Applied()
    with transaction.atomic():
        for kind, mapped in by_kind.items():
            applied += upsert(kind, mapped)
    return applied
