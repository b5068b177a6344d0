"""The advisory reads of the allocation index (``claims.capacity.index``): how many devices a class
and selectors match and where, the largest memory among them, what a class's devices publish.

Mixed into :class:`claims.capacity.index.AllocationIndex`; the results are kept per class or per
(class, selectors) until the inventory or the classes change (the index clears them), and each
read accepts a mirror check up to ``CLAIMS_INDEX_FRESH_MS`` old: they feed previews, estimates
and hints, never a decision.
"""

from __future__ import annotations

import heapq
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from dra.allocator import Cluster
from dra.model import ExactRequest

__all__ = ["IndexReads", "NodeCounts"]


@dataclass(frozen=True, slots=True)
class NodeCounts:
    """What :meth:`IndexReads.node_counts` answers. ``sharing_counters``: the nodes where
    some free matching device consumes shared counters (MIG partitions, and GPUs that can be
    partitioned), with how many matching devices are free there: on those nodes the free
    devices may not all fit together (``claims.capacity.fragmentation_reads.fits_together`` says how
    many do)."""

    matched: int
    free: int
    nodes: list[tuple[str, int, int]]  # (node, matching, free), the top nodes
    sharing_counters: dict[str, int]


class IndexReads:
    """See the module docstring. Expects the attributes :class:`AllocationIndex` sets."""

    lock: threading.RLock
    cluster: Cluster | None
    _counts: dict[tuple[str, tuple[str | None, ...]], tuple[int, int]]
    _published_by_class: dict[str, set[str]]
    _capacities_by_class: dict[str, dict[str, Counter[str]]]
    _matching_by_node: dict[tuple[str, tuple[str | None, ...]], Counter[str]]
    _node_of_uid: list[str]

    # Provided by AllocationIndex:
    catch_up: Callable[..., None]
    class_request: Callable[..., ExactRequest | None]

    def summary(self, device_class: str, request: ExactRequest) -> tuple[int, int]:
        """(how many devices the class and the request's selectors match, the largest memory
        among them in bytes), kept until the inventory or the classes change."""
        key = (device_class, tuple(request.selectors))
        with self.lock:
            self.catch_up()
            found = self._counts.get(key)
            if found is None:
                matched, _, _ = self.matching(device_class, request)
                found = (len(matched), self.max_memory(matched))
                self._counts[key] = found
            return found

    def matching(
        self, device_class: str, request: ExactRequest
    ) -> tuple[list[tuple[Any, Any]], set[int], set[int]]:
        """(devices matching, by (slice, device); uids of those free; uids raising errors)."""
        with self.lock:
            self.catch_up(force=False)
            assert self.cluster is not None
            cls = self.cluster.classes.get(device_class)
            passing, errors = self.cluster.request_matches(cls, request)
            devices = self.cluster.inventory.devices
            return [devices[uid] for uid in sorted(passing)], self._free(passing), set(errors)

    def _free(self, uids: set[int]) -> set[int]:
        """Of ``uids``, the devices whose availability is free: ``dra.allocator.availability``
        on the index's usage, the state the device pages show (the mirror computes theirs with
        the same function from the same claims). Reservations in flight count here before the
        mirror shows them. Call under the lock."""
        assert self.cluster is not None
        return uids - self.cluster.not_free()

    def class_published(self, device_class: str) -> set[str]:
        """Qualified attribute names the devices of a class publish."""
        with self.lock:
            self.catch_up(force=False)
            assert self.cluster is not None
            cls = self.cluster.classes.get(device_class)
            if cls is None:
                return set()
            if device_class in self._published_by_class:
                return set(self._published_by_class[device_class])
            request = self.class_request(device_class)
            assert request is not None
            passing, _ = self.cluster.request_matches(cls, request)
            devices = self.cluster.inventory.devices
            published = {
                name if "/" in name else f"{devices[uid][0].driver}/{name}"
                for uid in passing
                for name in devices[uid][1].attributes
            }
            self._published_by_class[device_class] = published
            return set(published)

    def node_counts(self, device_class: str, request: ExactRequest, top: int = 5) -> NodeCounts:
        """How many devices the class and the request's selectors match and how many of them
        are free (their availability, as every page counts them), in all and on the ``top``
        nodes by free then matching devices — for the preview; the per-node matching counts
        are kept until the inventory changes."""
        with self.lock:
            self.catch_up(force=False)
            assert self.cluster is not None
            cls = self.cluster.classes.get(device_class)
            passing, _ = self.cluster.request_matches(cls, request)
            free = self._free(passing)
            if len(self._node_of_uid) != len(self.cluster.inventory.devices):
                self._node_of_uid = [
                    resource_slice.node_name or device.node_name or "(shared by several nodes)"
                    for resource_slice, device in self.cluster.inventory.devices
                ]
            node_of = self._node_of_uid
            key = (device_class, tuple(request.selectors))
            matching = self._matching_by_node.get(key)
            if matching is None:
                matching = Counter(map(node_of.__getitem__, passing))
                self._matching_by_node[key] = matching
            free_by_node = Counter(map(node_of.__getitem__, free))
            ranked = heapq.nsmallest(
                top,
                matching,
                key=lambda node: (-free_by_node.get(node, 0), -matching[node], node),
            )
            devices = self.cluster.inventory.devices
            sharing = {
                node_of[uid]
                for uid in free
                if devices[uid][1].consumes_counters
                and (devices[uid][0].node_name or devices[uid][1].node_name)
            }
            return NodeCounts(
                len(passing),
                len(free),
                [(node, matching[node], free_by_node.get(node, 0)) for node in ranked],
                {node: free_by_node[node] for node in sorted(sharing)},
            )

    def class_capacities(self, device_class: str) -> dict[str, Counter[str]]:
        """Per qualified capacity name, how many of the class's devices publish each value
        (e.g. memory: {"81559Mi": 16}); kept until the inventory or the classes change."""
        with self.lock:
            self.catch_up(force=False)
            assert self.cluster is not None
            cached = self._capacities_by_class.get(device_class)
            if cached is not None:
                return cached
            cls = self.cluster.classes.get(device_class)
            capacities: dict[str, Counter[str]] = {}
            if cls is not None:
                request = self.class_request(device_class)
                assert request is not None
                passing, _ = self.cluster.request_matches(cls, request)
                devices = self.cluster.inventory.devices
                shapes: Counter[tuple[str, str, Any]] = Counter()
                for uid in passing:  # count by shape first: str() of a quantity is slow
                    resource_slice, device = devices[uid]
                    for name, capacity in device.capacity.items():
                        shapes[(resource_slice.driver, name, capacity.value)] += 1
                for (driver, name, value), count in shapes.items():
                    qualified = name if "/" in name else f"{driver}/{name}"
                    capacities.setdefault(qualified, Counter())[str(value)] += count
            self._capacities_by_class[device_class] = capacities
            return capacities

    def class_names(self) -> list[str]:
        with self.lock:
            self.catch_up(force=False)
            assert self.cluster is not None
            return sorted(self.cluster.classes)

    def max_memory(self, matched: Iterable[tuple[Any, Any]]) -> int:
        """The largest ``memory`` capacity among devices (bytes; 0 when none publishes one)."""
        # Whole bytes as ints: comparing 40,000 Fractions cost ~100 ms a request at S40k.
        largest = 0
        for _, device in matched:
            capacity = device.capacity.get("memory")
            if capacity is not None:
                value = capacity.value.value
                largest = max(largest, value.numerator // value.denominator)
        return largest
