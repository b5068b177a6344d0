"""Writing mapped objects to the database: idempotent, batched, and silent when nothing changed.

Rows are keyed by the object's uid. An event whose resourceVersion equals the stored one, or
is older than it, changes nothing, so replaying a batch after a crash or a relist that overlaps
a watch is harmless. Device rows keep their primary keys across slice updates (upsert on
slice + device name), so device URLs stay stable while the driver republishes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, models, transaction
from django.db.models import OuterRef, Q, QuerySet, Subquery

from claims.models import (
    AllocatedDevice,
    AllocationRecord,
    ClaimConsumer,
    Counted,
    ResourceClaim,
    ResourceClaimTemplate,
    UsageCounter,
    UsageKey,
    difference,
    summed,
)
from devices.locks import lock_device_writes
from devices.models import (
    Device,
    DeviceClass,
    Namespace,
    Node,
    Pod,
    ResourceSlice,
    SharedCounterSet,
)
from kube.kinds import Kind
from mirror.bulk import BATCH, BulkWriter
from mirror.claim_rows import (
    ALLOCATED_DEVICE_FIELDS,
    CONSUMER_FIELDS,
    record_allocations,
    replace_claim_children,
    set_tenants,
)
from mirror.mapping import Mapped, map_object
from mirror.states import DeviceKey, PoolKey, record_changes, refresh_pools, remember_parsed

__all__ = [
    "MODELS",
    "Applied",
    "analyze_after_load",
    "apply_events",
    "commit_without_waiting",
    "delete_missing",
    "is_newer",
    "load",
    "lock_device_writes",
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
    # Slices written whose spec is the one stored (metadata-only updates): their devices,
    # states and class memberships cannot have changed.
    same_spec: set[str] = field(default_factory=set)

    def __iadd__(self, other: Applied) -> Applied:
        self.written += other.written
        self.deleted += other.deleted
        self.malformed += other.malformed
        self.same_spec |= other.same_spec
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
    model = MODELS[kind]
    if uids is None:
        return dict(model._default_manager.values_list("uid", "resource_version"))
    # ``__any``: a relist asks this once per page of 500 (toolkit.lookups).
    return dict(
        model._default_manager.filter(uid__any=list(uids)).values_list("uid", "resource_version")
    )


def has_rows(kind: Kind) -> bool:
    """Whether any object of ``kind`` is mirrored."""
    return MODELS[kind]._default_manager.exists()


def commit_without_waiting() -> None:
    """The transaction in progress commits without waiting for its WAL to reach the disk
    (PostgreSQL's ``synchronous_commit = off`` for it alone).

    Only for the watchers' own transactions, which write nothing the cluster cannot give again
    and commit the resourceVersion they reached with the rows: a database crash loses at most
    the last fraction of a second of batches, rows and version together, and the watcher
    resumes from the older version and writes them again. The flush wait is a fixed cost per
    batch (most of a small batch's commit on this kind of disk)."""
    if connection.vendor == "postgresql" and connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit = off")


def _model_fields(model: type[models.Model]) -> list[str]:
    return [
        f.attname
        for f in model._meta.concrete_fields
        if not f.primary_key and f.name not in ("uid", "mirrored_at")
    ]


def upsert(kind: Kind, mapped: list[Mapped], *, pending: set[PoolKey] | None = None) -> Applied:
    """Creates or replaces the rows of already-mapped objects (children included).

    Call inside a transaction. Objects without a uid cannot be keyed and are skipped (they are
    counted as malformed). The device states of the pools the change touches are recomputed,
    or, given ``pending``, added to it for the caller to recompute once (a relist, page by page).
    """
    model = MODELS[kind]
    applied = Applied(malformed=sum(1 for m in mapped if m.problems))
    keyed = {m.fields["uid"]: m for m in mapped if m.fields.get("uid")}
    if not keyed:
        return applied
    touched: set[DeviceKey] = set()
    same_spec: set[str] = set()
    # The stored rows of this batch's objects, read once: primary key and what the kind
    # compares (a slice's pool and spec digest, a claim's children digest, the version of a
    # class or node, whose change the allocation index is told of). Read before the
    # lock: only this kind's watcher writes its rows.
    compared = {
        Kind.RESOURCE_SLICES: ("driver", "pool_name", "spec_digest"),
        Kind.RESOURCE_CLAIMS: ("children_digest", "tenant_id"),
        Kind.DEVICE_CLASSES: ("resource_version",),
        Kind.NODES: ("resource_version",),
    }.get(kind, ())
    current = {
        uid: values
        for uid, *values in model._default_manager.filter(uid__any=list(keyed)).values_list(
            "uid", "pk", *compared
        )
    }
    existing = {uid: values[0] for uid, values in current.items()}
    if kind == Kind.RESOURCE_SLICES:
        same_spec = {
            uid
            for uid, m in keyed.items()
            if m.fields["spec_digest"]
            and uid in current
            and current[uid][3] == m.fields["spec_digest"]
        }
        # A slice moving to another pool changes the pool it leaves, too.
        touched |= {
            (values[1], values[2], "") for uid, values in current.items() if uid not in same_spec
        }
    if same_spec != set(keyed):
        # Metadata-only slice updates write no device row and no state: they need no lock.
        _serialize_device_writes(kind)
    if kind in (Kind.RESOURCE_CLAIMS, Kind.RESOURCE_CLAIM_TEMPLATES):
        # A stored object keeps its name (the rows' unique namespace/name says no other row
        # has it): only new ones can meet a row left behind under their name.
        touched |= _free_reused_names(
            model, {uid: m for uid, m in keyed.items() if uid not in existing}
        )
    # A slice's raw object embeds its devices, whose rows repeat parts of it.
    writer = BulkWriter(
        embedded=("spec", "devices", "*", "*") if kind == Kind.RESOURCE_SLICES else ()
    )
    fields = _model_fields(model)
    if kind in (Kind.DEVICE_CLASSES, Kind.NODES) and any(
        uid not in current or current[uid][1] != m.fields.get("resource_version")
        for uid, m in keyed.items()
    ):
        _record_kind(kind)
    rows = {uid: {**m.fields, "problems": m.problems} for uid, m in keyed.items()}
    replaced: set[str] = set()
    counted: dict[UsageKey, Counted] = {}
    recounted: list[int] = []
    if kind == Kind.RESOURCE_CLAIMS:
        set_tenants(rows)
        # What the stored claims whose results or tenant change count in their tenants'
        # usage, before they change (the rest count the same after this batch).
        recounted = [
            values[0]
            for uid, values in current.items()
            if values[1] != rows[uid]["children_digest"]
            or not values[1]
            or values[2] != rows[uid]["tenant_id"]
        ]
        counted = _counted_claims(recounted)
        # Before the rows are written: their stored digests say whose children changed.
        replaced, devices = replace_claim_children(
            keyed, {uid: (values[0], values[1]) for uid, values in current.items()}
        )
        touched |= devices
    writer.insert(
        model, ["uid", *fields, "mirrored_at"], [r for u, r in rows.items() if u not in existing]
    )
    writer.upsert(
        model,
        ["uid", *fields, "mirrored_at"],
        [r for u, r in rows.items() if u in existing],
        unique=["uid"],
        update=fields,
    )
    if kind in (Kind.RESOURCE_SLICES, Kind.RESOURCE_CLAIMS):
        pks = dict(existing)
        if len(pks) < len(keyed):
            fresh = [uid for uid in keyed if uid not in existing]
            pks.update(model._default_manager.filter(uid__any=fresh).values_list("uid", "pk"))
        stored = {uid: keyed[uid] for uid in existing}
        if kind == Kind.RESOURCE_SLICES:
            respec = {uid: m for uid, m in keyed.items() if uid not in same_spec}
            # Device memory counts in the usage of the claims holding the devices: what the
            # results in the pools being republished count, before and after.
            republished = {
                (values[1], values[2]) for uid, values in current.items() if uid in respec
            } | {(m.fields["driver"], m.fields["pool_name"]) for m in respec.values()}
            counted = summed(_results_in(republished)) if republished else {}
            added = _replace_slice_children(
                writer, respec, {uid: m for uid, m in stored.items() if uid in respec}, pks
            )
            applied.same_spec = same_spec
            for uid, m in keyed.items():
                if m.parsed is not None:
                    remember_parsed(uid, m.fields["resource_version"], m.parsed)
            # Devices updated in place keep their rows, so results already point at them; only
            # pools that gained or lost device rows (a new slice or generation) change links.
            if added:
                link_devices(_results_in(added))
                # Allocation records opened before their device was mirrored learn its model.
                AllocationRecord.objects.describe_devices(
                    {driver for driver, _ in added}, {pool for _, pool in added}
                )
            touched |= {(m.fields["driver"], m.fields["pool_name"], "") for m in respec.values()}
            if republished:
                UsageCounter.objects.add(difference(summed(_results_in(republished)), counted))
        else:
            touched |= _insert_claim_children(writer, keyed, replaced, pks)
            # The allocation history follows the results just written, in this transaction
            # (a claim whose results are unchanged has its records already).
            record_allocations(writer, replaced, rows, pks)
            recounted += [pks[uid] for uid in keyed if uid not in existing]
            UsageCounter.objects.add(difference(_counted_claims(recounted), counted))
    _refresh(_pools(touched), pending)
    applied.written = len(keyed)
    return applied


# Tables written with a kind's rows, whose statistics a cold load makes wrong.
_CHILD_TABLES: dict[Kind, list[type[models.Model]]] = {
    Kind.RESOURCE_SLICES: [Device, SharedCounterSet],
    Kind.RESOURCE_CLAIMS: [AllocatedDevice, ClaimConsumer, UsageCounter],
}
# A load of this many rows or more is followed by ANALYZE.
ANALYZE_AFTER_ROWS = 1000


def analyze_after_load(kind: Kind, written: int) -> None:
    """Refreshes the planner's statistics of the kind's tables after a load of ``written``
    rows into tables that were empty (PostgreSQL). Autovacuum would, a minute or so later;
    until then the planner takes the tables for empty and scans where an index answers (a
    batch's 50 claims' results read by a sequential scan of all 10,000: 6 ms for 0.2)."""
    if connection.vendor != "postgresql" or written < ANALYZE_AFTER_ROWS:
        return
    tables = [m._meta.db_table for m in [MODELS[kind], *_CHILD_TABLES.get(kind, [])]]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE " + ", ".join(connection.ops.quote_name(t) for t in tables))


def _counted_claims(claim_ids: list[int]) -> dict[UsageKey, Counted]:
    """What these claims count in their tenants' usage (``claims.models.usage_counters``)."""
    return summed(AllocatedDevice.objects.filter(claim_id__any=claim_ids)) if claim_ids else {}


def _serialize_device_writes(kind: Kind) -> None:
    if kind in (Kind.RESOURCE_SLICES, Kind.RESOURCE_CLAIMS):
        lock_device_writes()


def _results_in(pools: set[PoolKey]) -> QuerySet[AllocatedDevice]:
    """The allocation results naming a device of one of ``pools``: per driver, its pools as
    one array (an ``OR`` of 500 driver/pool pairs cost more to build and plan than to run)."""
    by_driver: dict[str, list[str]] = {}
    for driver, pool in pools:
        by_driver.setdefault(driver, []).append(pool)
    if not by_driver:
        return AllocatedDevice.objects.none()
    condition = Q()
    for driver, names in sorted(by_driver.items()):
        condition |= Q(driver=driver, pool__any=sorted(names))
    return AllocatedDevice.objects.filter(condition)


def _refresh(pools: set[PoolKey], pending: set[PoolKey] | None) -> None:
    if pending is None:
        refresh_pools(pools)
    else:
        pending |= pools


def _record_kind(kind: Kind) -> None:
    """Device classes and nodes feed the allocation index too: log that they changed."""
    if kind in (Kind.DEVICE_CLASSES, Kind.NODES):
        record_changes(scope=kind.value)


def _pools(keys: Iterable[DeviceKey]) -> set[PoolKey]:
    return {(driver, pool) for driver, pool, _ in keys}


def claim_device_keys(claim_filter: Q) -> set[DeviceKey]:
    """The devices named by the allocation results of the claims matching ``claim_filter``."""
    results = AllocatedDevice.objects.filter(claim_filter)
    return set(results.values_list("driver", "pool", "device_name"))


def link_devices(results: QuerySet[AllocatedDevice]) -> int:
    """Points allocation results at the mirrored device they name.

    A pool being republished may list a device in slices of two generations for a moment: the
    newest generation's row is the device. Results naming no mirrored device get null.
    """
    newest = (
        Device.objects.filter(
            driver=OuterRef("driver"), pool_name=OuterRef("pool"), name=OuterRef("device_name")
        )
        .order_by("-resource_slice__pool_generation", "pk")
        .values("pk")[:1]
    )
    return results.update(device_id=Subquery(newest))


def _free_reused_names(model: type[models.Model], keyed: dict[str, Mapped]) -> set[DeviceKey]:
    """Deletes rows holding the namespace/name of one of ``keyed`` under another uid: a name
    reused by a new object (delete + create missed during a relist) frees the name. Returns the
    devices the deleted claims held."""
    wanted = {(m.fields["namespace"], m.fields["name"]) for m in keyed.values()}
    stale = {
        pk: uid
        for pk, uid, namespace, name in model._default_manager.filter(
            name__any={name for _, name in wanted}
        ).values_list("pk", "uid", "namespace", "name")
        if (namespace, name) in wanted and uid not in keyed
    }
    if not stale:
        return set()
    held: set[DeviceKey] = set()
    counted: dict[UsageKey, Counted] = {}
    if model is ResourceClaim:
        held = claim_device_keys(Q(claim_id__in=list(stale)))
        AllocationRecord.objects.close_claims(stale.values())  # the old claim is gone
        counted = _counted_claims(list(stale))
    model._default_manager.filter(pk__in=list(stale)).delete()
    UsageCounter.objects.add(difference({}, counted))
    return held


def _replace_slice_children(
    writer: BulkWriter, keyed: dict[str, Mapped], stored: dict[str, Mapped], pks: dict[str, int]
) -> set[PoolKey]:
    """Devices keep their rows (and primary keys) across updates of their slice: upserted on
    slice + name, those the slice no longer lists deleted. Counter sets are replaced. Returns
    the pools that gained or lost device rows."""
    devices = {
        (pks[uid], row["name"]): {"resource_slice_id": pks[uid], **row}
        for uid, m in keyed.items()
        for row in m.children.get("devices", [])
    }
    stored_ids = [pks[uid] for uid in stored]
    current: set[tuple[int, str]] = set()
    changed: set[PoolKey] = set()
    if stored_ids:
        gone = []
        for pk, slice_id, name, driver, pool in Device.objects.filter(
            resource_slice_id__in=stored_ids
        ).values_list("pk", "resource_slice_id", "name", "driver", "pool_name"):
            current.add((slice_id, name))
            if (slice_id, name) not in devices:
                gone.append(pk)
                changed.add((driver, pool))
        if gone:
            Device.objects.filter(pk__in=gone).delete()
        SharedCounterSet.objects.filter(resource_slice_id__in=stored_ids).delete()
    names = ["resource_slice_id", "name", *DEVICE_FIELDS]
    inserted = [row for key, row in devices.items() if key not in current]
    writer.insert(Device, names, inserted)
    writer.upsert(
        Device,
        names,
        [row for key, row in devices.items() if key in current],
        unique=["resource_slice", "name"],
        update=DEVICE_FIELDS,
    )
    writer.insert(
        SharedCounterSet,
        ["resource_slice_id", "driver", "pool_name", "name", "counters"],
        [
            {"resource_slice_id": pks[uid], **row}
            for uid, m in keyed.items()
            for row in m.children.get("counter_sets", [])
        ],
    )
    return changed | {(row["driver"], row["pool_name"]) for row in inserted}


def _insert_claim_children(
    writer: BulkWriter, keyed: dict[str, Mapped], replace: set[str], pks: dict[str, int]
) -> set[DeviceKey]:
    """Writes the children of the claims ``replace`` (their old ones deleted, or new claims);
    returns the devices they name."""
    writer.insert(
        AllocatedDevice,
        ["claim_id", *ALLOCATED_DEVICE_FIELDS],
        [
            {"claim_id": pks[uid], **row}
            for uid in replace
            for row in keyed[uid].children.get("allocated_devices", [])
        ],
    )
    writer.insert(
        ClaimConsumer,
        ["claim_id", *CONSUMER_FIELDS],
        [
            {"claim_id": pks[uid], **row}
            for uid in replace
            for row in keyed[uid].children.get("consumers", [])
        ],
    )
    if replace:
        link_devices(AllocatedDevice.objects.filter(claim_id__any=[pks[uid] for uid in replace]))
    return {
        (row["driver"], row["pool"], row["device_name"])
        for uid in replace
        for row in keyed[uid].children.get("allocated_devices", [])
    }


def apply_events(kind: Kind, events: list[dict[str, Any]]) -> Applied:
    """Applies a batch of watch events (ADDED / MODIFIED / DELETED) in one transaction.

    Later events for the same object win; stale and repeated events write nothing.
    """
    latest: dict[str, tuple[str, Mapped]] = {}
    unkeyed: list[Mapped] = []
    for event in events:
        mapped = map_object(kind, event.get("object"))
        uid = mapped.fields.get("uid")
        if not uid:
            unkeyed.append(mapped)
            continue
        latest[uid] = (event.get("type", ""), mapped)
    applied = Applied(malformed=sum(1 for m in unkeyed if m.problems))
    with transaction.atomic():
        stored = stored_versions(kind, latest)
        # The states of the pools the deletes and the writes touch, recomputed once.
        pools: set[PoolKey] = set()
        deleted = [uid for uid, (type_, _) in latest.items() if type_ == "DELETED"]
        if deleted:
            _delete(kind, deleted, pools)
            applied.deleted = len(set(deleted) & set(stored))
        changed = [
            mapped
            for uid, (type_, mapped) in latest.items()
            if type_ != "DELETED" and is_newer(mapped.fields["resource_version"], stored.get(uid))
        ]
        applied += upsert(kind, changed, pending=pools)
        refresh_pools(pools)
    return applied


def delete_missing(
    kind: Kind, seen_uids: set[str], list_version: str = "", *, pending: set[PoolKey] | None = None
) -> int:
    """Deletes the rows of objects a complete relist (at ``list_version``) did not return.

    A row written from a watch event newer than the list is kept: the object was created
    after the list's snapshot. ``pending``: as for :func:`upsert`.
    """
    model = MODELS[kind]
    listed_at = _version(list_version)
    gone = [
        uid
        for uid, version in model._default_manager.values_list("uid", "resource_version")
        if uid not in seen_uids and (listed_at is None or (_version(version) or 0) <= listed_at)
    ]
    deleted = 0
    for start in range(0, len(gone), BATCH):
        chunk = gone[start : start + BATCH]
        _delete(kind, chunk, pending)
        deleted += len(chunk)
    return deleted


def _delete(kind: Kind, uids: list[str], pending: set[PoolKey] | None = None) -> None:
    """Deletes rows by uid; devices held by deleted claims get their state recomputed."""
    _serialize_device_writes(kind)
    held: set[DeviceKey] = set()
    counted: dict[UsageKey, Counted] = {}
    if kind == Kind.RESOURCE_CLAIMS:
        claim_pks = list(ResourceClaim.objects.filter(uid__any=uids).values_list("pk", flat=True))
        held = claim_device_keys(Q(claim_id__any=claim_pks)) if claim_pks else set()
        # A deleted claim (or one a relist no longer lists) ends its allocation history,
        # and no longer counts in its tenant's usage.
        AllocationRecord.objects.close_claims(uids)
        counted = _counted_claims(claim_pks)
    pools: set[tuple[str, str]] = set()
    if kind == Kind.RESOURCE_SLICES:
        pools = set(ResourceSlice.objects.filter(uid__any=uids).values_list("driver", "pool_name"))
        if pools:
            counted = summed(_results_in(pools))
    # Only the keys: the collector reads the rows to cascade from them, not their JSON.
    MODELS[kind]._default_manager.filter(uid__any=uids).only("pk").delete()
    if pools:
        # Results holding a deleted device now point at nothing, or at the same device in
        # another slice of its pool.
        link_devices(_results_in(pools))
    UsageCounter.objects.add(difference(summed(_results_in(pools)) if pools else {}, counted))
    _refresh(pools | _pools(held), pending)
    _record_kind(kind)


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
