"""The warm allocation index: the portal's equivalent of the scheduler's cache.

One :class:`AllocationIndex` per process holds the mirrored inventory parsed once into the DRA
core's :class:`dra.allocator.Cluster` (CEL results cached per device shape, devices indexed by
node and by the requests they match). It follows the mirror through the inventory change log
(``devices.InventoryChange``): a change to a pool's allocations updates that pool's usage in
place; a change to slices rebuilds; device classes and nodes are reloaded. It is never rebuilt
per request.

Reservations the portal has written but the mirror does not show yet are **assumed**: their
devices count as in use, here and in every other process (they are read from the requests'
rows), until the mirror confirms them, so two requests can never receive the same device.

Where it runs (docs/claims.md): reservation-mode allocation runs in the ``allocations`` Celery
queue, which has one consumer, so reservations are decided one at a time against one index;
previews and "would it fit" use the web process's own index, which is advice only. In the
embedded mode everything runs in one process and a lock serialises the index.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from django.conf import settings
from django.db.models import Exists, Max, Min, OuterRef

from claims.capacity.index_reads import IndexReads
from claims.models import AllocatedDevice, AllocationMode, ClaimRequest, ResourceClaim
from devices.models import DeviceClass, InventoryChange, Node, ResourceSlice
from dra.allocator import (
    DEFAULT_TIMEOUT_SECONDS,
    AllocatedState,
    Cluster,
    Inventory,
    RequestExplanation,
    allocation_result,
    explain_claims,
)
from dra.features import PORTAL_FEATURES
from dra.model import (
    ExactRequest,
    InvalidObject,
    parse_claim,
    parse_device_class,
    parse_node,
    parse_slice,
)
from dra.model import (
    ResourceClaim as ClaimModel,
)
from dra.model import ResourceSlice as SliceModel
from dra.quantity import QuantityError, parse_quantity

__all__ = ["AllocationIndex", "Placement", "index", "reset_index"]

PoolKey = tuple[str, str]
DeviceKey = tuple[str, str, str]
NODE_RELOAD_SECONDS = 5.0
# How long a reservation chosen by this process is assumed before its row must show it.
LOCAL_SECONDS = 30.0
# How far back (in change ids) catch_up looks for changes committed out of id order.
LOOKBACK = 2000
# An unsatisfiable placement is explained on at most this many nodes: those with the most
# free devices the request could use (explaining every node of a large cluster takes seconds).
EXPLAIN_NODES = 16


@dataclass(slots=True)
class Placement:
    """The outcome of one allocation: ``allocation`` (status.allocation JSON) and its node, or
    ``explanations`` (why not), or ``error``."""

    allocation: dict[str, Any] | None = None
    node: str | None = None
    error: str | None = None
    explanations: list[RequestExplanation] = field(default_factory=list)

    @property
    def keys(self) -> set[DeviceKey]:
        results = ((self.allocation or {}).get("devices") or {}).get("results") or []
        return {
            (r["driver"], r["pool"], r["device"])
            for r in results
            if not r.get("adminAccess") and not r.get("shareID")
        }


def _consumed(raw: Any) -> dict[str, Fraction]:
    amounts: dict[str, Fraction] = {}
    if isinstance(raw, dict):
        for name, value in raw.items():
            try:
                amounts[str(name)] = parse_quantity(str(value)).value
            except QuantityError:
                continue
    return amounts


class AllocationIndex(IndexReads):
    """See the module docstring. Use :func:`index` for the process's instance."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.cluster: Cluster | None = None
        self.cursor = 0
        self.built_at = 0.0
        self.builds = 0
        self.updates = 0
        # Bumped whenever what is allocatable may have changed (inventory, usage, classes,
        # nodes): results derived from the index can be kept per version.
        self.version = 0
        self.published: set[str] = set()
        self._slice_versions: dict[PoolKey, set[tuple[str, str]]] = {}
        self._mirrored: dict[
            PoolKey, tuple[set[DeviceKey], dict[DeviceKey, dict[str, Fraction]]]
        ] = {}
        self._assumed: dict[str, set[DeviceKey]] = {}
        # Attributes published per class: they change only with slices (a rebuild) or classes.
        self._published_by_class: dict[str, set[str]] = {}
        self._nodes_stale_since: float | None = None
        self._seen: set[int] = set()
        self._counts: dict[tuple[str, tuple[str | None, ...]], tuple[int, int]] = {}
        self._capacities_by_class: dict[str, dict[str, Counter[str]]] = {}
        self._matching_by_node: dict[tuple[str, tuple[str | None, ...]], Counter[str]] = {}
        self._node_of_uid: list[str] = []
        self._nodes_loaded_at = 0.0
        self._checked_at = 0.0
        self._local_at: dict[str, float] = {}

    # --- building and following the mirror ---------------------------------------------------

    def _latest_change(self) -> int:
        return InventoryChange.objects.aggregate(latest=Max("id"))["latest"] or 0

    def rebuild(self) -> None:
        with self.lock:
            cursor = self._latest_change()
            classes = self._load_classes()
            slices: list[SliceModel] = []
            versions: dict[PoolKey, set[tuple[str, str]]] = defaultdict(set)
            for name, uid, version, driver, pool, raw in ResourceSlice.objects.values_list(
                "name", "uid", "resource_version", "driver", "pool_name", "raw"
            ):
                versions[(driver, pool)].add((uid, version))
                try:
                    slices.append(parse_slice(raw, name))
                except InvalidObject:
                    continue
            nodes = self._load_nodes()
            self._mirrored = self._load_usage(None)
            state = AllocatedState()
            for keys, consumed in self._mirrored.values():
                state.in_use |= keys
                for key, amounts in consumed.items():
                    state.consumed[key] = dict(amounts)
            self.cluster = Cluster(PORTAL_FEATURES, classes, Inventory(slices), nodes, state)
            # Every device's availability, computed with the build rather than by the first
            # preview or page that asks which devices are free (half a second at 40,000).
            self.cluster.not_free()
            self._slice_versions = dict(versions)
            self.published = {
                name if "/" in name else f"{resource_slice.driver}/{name}"
                for resource_slice in slices
                for device in resource_slice.devices
                for name in device.attributes
            }
            self.cursor = cursor
            self.built_at = time.monotonic()
            self._nodes_loaded_at = self.built_at
            self.builds += 1
            self._forget_answers()
            # The new cluster holds the mirror's usage only: keep this process's choices not
            # yet committed, and read the committed ones again.
            local = {k: v for k, v in self._assumed.items() if k.startswith("local:")}
            self._assumed = local
            if local:
                self._apply({(key[0], key[1]) for keys in local.values() for key in keys})
            self._refresh_assumed()

    def _load_classes(self) -> dict[str, Any]:
        classes = {}
        for name, raw in DeviceClass.objects.values_list("name", "raw"):
            try:
                device_class = parse_device_class(raw, f"deviceclass {name}")
            except InvalidObject:
                continue
            classes[device_class.name] = device_class
        return classes

    def _load_nodes(self) -> list[Any]:
        nodes = []
        for name, raw in Node.objects.values_list("name", "raw"):
            try:
                nodes.append(parse_node(raw, f"node {name}"))
            except InvalidObject:
                continue
        return nodes

    def _load_usage(
        self, pools: set[PoolKey] | None
    ) -> dict[PoolKey, tuple[set[DeviceKey], dict[DeviceKey, dict[str, Fraction]]]]:
        rows = AllocatedDevice.objects.filter(admin_access=False)
        if pools is not None:
            rows = rows.filter(driver__in={d for d, _ in pools}, pool__in={p for _, p in pools})
        usage: dict[PoolKey, tuple[set[DeviceKey], dict[DeviceKey, dict[str, Fraction]]]] = {
            pool: (set(), {}) for pool in pools or ()
        }
        for driver, pool, device, share_id, consumed in rows.values_list(
            "driver", "pool", "device_name", "share_id", "consumed_capacity"
        ):
            if pools is not None and (driver, pool) not in pools:
                continue
            keys, shares = usage.setdefault((driver, pool), (set(), {}))
            key = (driver, pool, device)
            if share_id:
                totals = shares.setdefault(key, {})
                for name, amount in _consumed(consumed).items():
                    totals[name] = totals.get(name, Fraction(0)) + amount
            else:
                keys.add(key)
        return usage

    def catch_up(self, *, force: bool = True) -> None:
        """Apply the mirror's changes since the last call (cheap when there are none).

        ``force=False`` (the advisory reads: previews, counts, hints) skips the check when the
        last one is younger than ``CLAIMS_INDEX_FRESH_MS``: one preview makes a handful of
        reads, and a fraction of a second of staleness is fine for advice. Decisions
        (reservations, "would it fit") always check."""
        with self.lock:
            if self.cluster is None:
                self.rebuild()
                self._checked_at = time.monotonic()
                return
            now = time.monotonic()
            if not force and (now - self._checked_at) * 1000 < settings.CLAIMS_INDEX_FRESH_MS:
                return
            self._checked_at = now
            # Ids come from a sequence at insert time, so two mirror transactions can commit
            # out of id order: read back over a trailing window and apply what is new in it,
            # rather than trusting everything below the cursor to be committed already.
            changes = [
                row
                for row in InventoryChange.objects.after(self.cursor - LOOKBACK).values_list(
                    "id", "scope", "driver", "pool_name"
                )[:20_000]
                if row[0] not in self._seen
            ]
            if changes and self.cursor:
                oldest = InventoryChange.objects.aggregate(oldest=Min("id"))["oldest"] or 0
                if oldest > self.cursor + 1:  # pruned past us: we may have missed changes
                    self.rebuild()
                    return
            if changes:
                self._seen.update(row[0] for row in changes)
                top = max(self.cursor, max(row[0] for row in changes))
                self._seen = {seen for seen in self._seen if seen > top - LOOKBACK}
            pools: set[PoolKey] = set()
            reload_classes = False
            for _, scope, driver, pool in changes:
                if scope == InventoryChange.Scope.POOL:
                    pools.add((driver, pool))
                elif scope == InventoryChange.Scope.DEVICE_CLASSES:
                    reload_classes = True
                elif scope == InventoryChange.Scope.NODES and self._nodes_stale_since is None:
                    self._nodes_stale_since = time.monotonic()
            if changes:
                self.cursor = max(self.cursor, changes[-1][0])
            if pools and self._slices_changed(pools):
                self.rebuild()
                return
            if reload_classes:
                self.cluster.replace_classes(self._load_classes())
                self._forget_answers()
            if pools:
                self._update_pools(pools)
            if (
                self._nodes_stale_since is not None
                and time.monotonic() - self._nodes_loaded_at >= NODE_RELOAD_SECONDS
            ):
                self.cluster.replace_nodes(self._load_nodes())
                self.version += 1
                self._nodes_stale_since = None
                self._nodes_loaded_at = time.monotonic()
            self._refresh_assumed()

    def _forget_answers(self) -> None:
        """The inventory or the classes changed: every answer derived from them goes (the
        per-class reads here; results kept elsewhere by ``version``)."""
        self.version += 1
        self._published_by_class = {}
        self._capacities_by_class = {}
        self._counts = {}
        self._matching_by_node = {}
        self._node_of_uid = []

    def _slices_changed(self, pools: set[PoolKey]) -> bool:
        found: dict[PoolKey, set[tuple[str, str]]] = defaultdict(set)
        for driver, pool, uid, version in ResourceSlice.objects.filter(
            driver__in={d for d, _ in pools}, pool_name__in={p for _, p in pools}
        ).values_list("driver", "pool_name", "uid", "resource_version"):
            if (driver, pool) in pools:
                found[(driver, pool)].add((uid, version))
        return any(
            found.get(pool, set()) != self._slice_versions.get(pool, set()) for pool in pools
        )

    def _update_pools(self, pools: set[PoolKey]) -> None:
        self._mirrored.update(self._load_usage(pools))
        self._apply(pools)
        self.updates += len(pools)

    def _apply(self, pools: set[PoolKey]) -> None:
        """Push mirrored ∪ assumed usage of ``pools`` into the cluster."""
        assert self.cluster is not None
        state = AllocatedState()
        for pool in pools:
            keys, consumed = self._mirrored.get(pool, (set(), {}))
            state.in_use |= keys
            state.consumed.update(consumed)
        for keys in self._assumed.values():
            state.in_use |= {key for key in keys if (key[0], key[1]) in pools}
        self.cluster.replace_usage(pools, state)
        self.version += 1

    def _refresh_assumed(self) -> None:
        """Reservations written (or being written) by the portal and not yet mirrored."""
        # Runs on every catch_up: PostgreSQL leaves out the reservations the mirror shows, so
        # the cost follows the few in flight, not every active reservation.
        mirrored = ResourceClaim.objects.filter(
            namespace=OuterRef("namespace"), name=OuterRef("name"), is_allocated=True
        )
        rows = (
            ClaimRequest.objects.filter(
                mode=AllocationMode.RESERVATION,
                state__in=[
                    ClaimRequest.State.ALLOCATING,
                    ClaimRequest.State.APPLIED,
                    ClaimRequest.State.IN_USE,
                ],
                allocation__isnull=False,
            )
            .exclude(Exists(mirrored))
            .order_by()
        )
        # Ids first; allocations are read only for reservations this index has not seen.
        # Keyed by id and last change, so a reservation moved to other devices is read again.
        current = {
            f"{pk}@{changed.isoformat()}" for pk, changed in rows.values_list("pk", "updated_at")
        }
        known = {key for key in self._assumed if not key.startswith("local:")}
        added = current - known
        removed = known - current
        # A local assumption covers the moment between choosing and committing: once the
        # row is visible here it takes over; one whose row never shows (failed, or mirrored
        # already) goes after LOCAL_SECONDS.
        committed = {key.partition("@")[0] for key in current}
        now = time.monotonic()
        stale = [
            key
            for key, since in self._local_at.items()
            if key.partition(":")[2] in committed or now - since > LOCAL_SECONDS
        ]
        for key in stale:
            del self._local_at[key]
            removed.add(key)
        if not added and not removed:
            return
        assumed = {key: keys for key, keys in self._assumed.items() if key not in removed}
        if added:
            wanted = {key.partition("@")[0]: key for key in added}
            for pk, allocation in ClaimRequest.objects.filter(pk__in=list(wanted)).values_list(
                "pk", "allocation"
            ):
                assumed[wanted[str(pk)]] = Placement(allocation=allocation).keys
        pools = {
            (key[0], key[1])
            for request_id in added | removed
            for key in (assumed.get(request_id) or self._assumed.get(request_id) or ())
        }
        self._assumed = assumed
        self._apply(pools)

    def slice_versions(self, pool: PoolKey) -> frozenset[tuple[str, str]]:
        """(uid, resourceVersion) of the pool's slices the cluster was built from: what a
        result derived from the pool's devices can be kept by across rebuilds."""
        return frozenset(self._slice_versions.get(pool, ()))

    # --- using it ----------------------------------------------------------------------------

    def assume(self, request_id: str, placement: Placement) -> None:
        """Count the placement's devices as in use at once, before its row is committed."""
        with self.lock:
            self._assumed[f"local:{request_id}"] = placement.keys
            self._local_at[f"local:{request_id}"] = time.monotonic()
            self._apply({(key[0], key[1]) for key in placement.keys})

    def forget(self, request_id: str) -> None:
        with self.lock:
            keys = self._assumed.pop(f"local:{request_id}", set())
            self._local_at.pop(f"local:{request_id}", None)
            if keys:
                self._apply({(key[0], key[1]) for key in keys})

    def parse(self, namespace: str, name: str, spec: dict[str, Any]) -> ClaimModel:
        return parse_claim(
            {"metadata": {"name": name, "namespace": namespace, "uid": name}, "spec": spec},
            f"claim {namespace}/{name}",
        )

    def class_request(
        self, device_class: str, selectors: tuple[str, ...] | list[str] = ()
    ) -> ExactRequest | None:
        """A one-request claim's parsed request for a class and selectors (what previews,
        estimates and class summaries match devices with); None when it does not parse."""
        spec = {
            "devices": {
                "requests": [
                    {
                        "name": "devices",
                        "exactly": {
                            "deviceClassName": device_class,
                            "selectors": [{"cel": {"expression": e}} for e in selectors],
                        },
                    }
                ]
            }
        }
        try:
            return self.parse("index", "class", spec).requests[0].exactly
        except (InvalidObject, IndexError):
            return None

    def place(
        self,
        claim: ClaimModel,
        *,
        explain: bool = True,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> Placement:
        """Where the claim would be allocated now (nothing is recorded)."""
        with self.lock:
            self.catch_up()
            assert self.cluster is not None
            outcome = self.cluster.allocate([claim], None, timeout)
            if outcome.allocations and outcome.node is not None:
                allocation = allocation_result(
                    outcome.allocations[0], outcome.node.name, PORTAL_FEATURES
                )
                return Placement(allocation=allocation, node=outcome.node.name)
            placement = Placement(error=outcome.error)
            if explain:
                placement.explanations = explain_claims(
                    self.cluster, [claim], among=self._likely_nodes(claim)
                )
            return placement

    def _likely_nodes(self, claim: ClaimModel) -> set[str] | None:
        """The nodes worth explaining a failure on: those with the most free devices the
        claim's requests could use, then those with any matching device (None: all nodes,
        when the cluster is small enough to explain whole)."""
        assert self.cluster is not None
        if len(self.cluster.nodes) <= EXPLAIN_NODES:
            return None
        devices = self.cluster.inventory.devices
        free: Counter[str] = Counter()
        matching: Counter[str] = Counter()
        for request in claim.requests:
            options = [request.exactly] if request.exactly is not None else request.first_available
            for option in options:
                if option is None:
                    continue
                cls = self.cluster.classes.get(option.device_class_name)
                passing, _ = self.cluster.request_matches(cls, option)
                for uid in self.cluster.free_matching(cls, option):
                    free[devices[uid][0].node_name or ""] += 1
                for uid in passing:
                    matching[devices[uid][0].node_name or ""] += 1
        chosen = [name for name, _ in free.most_common(EXPLAIN_NODES) if name]
        for name, _ in matching.most_common():
            if len(chosen) >= EXPLAIN_NODES:
                break
            if name and name not in chosen:
                chosen.append(name)
        return set(chosen) or {node.name for node in self.cluster.nodes[:EXPLAIN_NODES]}


_INDEX: AllocationIndex | None = None
_INDEX_LOCK = threading.Lock()


def index() -> AllocationIndex:
    """This process's index (built on first use)."""
    global _INDEX
    with _INDEX_LOCK:
        if _INDEX is None:
            _INDEX = AllocationIndex()
        return _INDEX


def reset_index() -> None:
    """Drop the process's index (tests, after loading a different cluster)."""
    global _INDEX
    with _INDEX_LOCK:
        _INDEX = None
