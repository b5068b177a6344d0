"""The fragmentation advisor (``claims.capacity.fragmentation``) on the process's warm allocation
index.

The trial allocations run on a scratch copy of the index's cluster taken under its lock, then
without holding it. What the advisor looks at (``advisable``: classes, their devices by node,
the GPUs' names) is found once per inventory and device classes, on the index's own cluster so
its cached CEL results serve. Each node's answer is kept with the state it was computed from
(its pools' slices and usage, and its labels): a claim allocated or released, or a slice
republished, recomputes that node only; answers outlive the index's rebuilds as long as the
shapes tried and the device classes' selectors stay the same.

A cluster-wide answer asks about nodes whose state changed until ``budget`` seconds have
passed; the nodes left are listed as pending, and the next call goes on from there (the page
reloads itself until none is left).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from django.conf import settings

from claims.capacity.fragmentation import (
    Advisable,
    ClusterAdvice,
    NodeAdvice,
    Probe,
    Shape,
    ShapeFit,
    ShapeKind,
    advisable,
    scratch_copy,
    summarise,
)
from claims.capacity.index import AllocationIndex, index
from devices.models import Device, Node
from dra.allocator import DEFAULT_TIMEOUT_SECONDS, Cluster

__all__ = ["FitsTogether", "cluster_advice", "fits_together", "is_known_node", "node_advice"]

NodeState = tuple[Any, ...]


@dataclass(slots=True)
class _Kept:
    """The answers of one index, by node, for one list of shapes."""

    owner: AllocationIndex
    inventory: Any
    classes: dict[str, Any]
    found: Advisable
    shapes: tuple[Any, ...]
    selectors: tuple[Any, ...]  # every class's selectors: which devices each class takes
    nodes: dict[str, tuple[NodeState, NodeAdvice]] = field(default_factory=dict)


_LOCK = threading.Lock()  # serialises the advisor (its answers are shared)
_KEPT: _Kept | None = None


def _kept(current: AllocationIndex, cluster: Cluster) -> _Kept:
    """The kept answers for the index's current inventory (new ones when it changed). Call
    under the index's lock."""
    global _KEPT
    kept = _KEPT
    if (
        kept is None
        or kept.owner is not current
        or kept.inventory is not cluster.inventory
        or kept.classes is not cluster.classes
    ):
        found = advisable(cluster)
        shapes = tuple(found.shapes)
        selectors = tuple(sorted((name, c.selectors) for name, c in cluster.classes.items()))
        same = (
            kept is not None
            and kept.owner is current
            and kept.shapes == shapes
            and kept.selectors == selectors
        )
        answers = kept.nodes if kept is not None and same else {}
        kept = _Kept(current, cluster.inventory, cluster.classes, found, shapes, selectors, answers)
        _KEPT = kept
    return kept


def _states(
    current: AllocationIndex,
    cluster: Cluster,
    pools_of: Mapping[str, Iterable[tuple[str, str]]],
    nodes: list[str],
) -> dict[str, NodeState]:
    """Per node, what its answer depends on besides the shapes tried: its pools' slices
    (``pools_of`` the node), what is in use in them (whole devices and shares) and its
    labels."""
    in_use: dict[tuple[str, str], list[str]] = defaultdict(list)
    for driver, pool, device in cluster.allocated.in_use:
        in_use[(driver, pool)].append(device)
    consumed: dict[tuple[str, str], list[tuple[str, tuple[tuple[str, Fraction], ...]]]] = (
        defaultdict(list)
    )
    for (driver, pool, device), amounts in cluster.allocated.consumed.items():
        consumed[(driver, pool)].append((device, tuple(sorted(amounts.items()))))
    labels = {node.name: tuple(sorted(node.labels.items())) for node in cluster.nodes}
    states = {}
    for node in nodes:
        pools = sorted(pools_of.get(node, ()))
        states[node] = (
            tuple((pool, tuple(sorted(in_use.get(pool, ())))) for pool in pools),
            tuple((pool, tuple(sorted(consumed.get(pool, ())))) for pool in pools),
            labels.get(node),
            tuple(current.slice_versions(pool) for pool in pools),
        )
    return states


def _prepare(nodes: list[str] | None) -> tuple[_Kept, Probe | None, dict[str, NodeState], int]:
    """The kept answers, a probe on a scratch copy of the index's cluster (None when every
    wanted node's answer is current), the nodes' states and the index's version."""
    current = index()
    with current.lock:
        current.catch_up(force=False)
        assert current.cluster is not None
        kept = _kept(current, current.cluster)
        wanted = kept.found.nodes if nodes is None else nodes
        states = _states(current, current.cluster, kept.found.pools, wanted)
        stale = [node for node in wanted if (kept.nodes.get(node) or (None,))[0] != states[node]]
        probe = Probe(scratch_copy(current.cluster), DEFAULT_TIMEOUT_SECONDS) if stale else None
        return kept, probe, states, current.version


def cluster_advice(*, budget: float | None = None) -> ClusterAdvice:
    """Every node's answer and the cluster-wide summary. Nodes whose state changed since
    their answer are asked about again, for at most ``budget`` seconds (default: the
    ``FRAGMENTATION_BUDGET_MS`` setting); the rest are ``pending``."""
    if budget is None:
        budget = settings.FRAGMENTATION_BUDGET_MS / 1000
    with _LOCK:
        kept, probe, states, version = _prepare(None)
        started = time.perf_counter()
        answers: list[NodeAdvice] = []
        pending: list[str] = []
        for node, state in states.items():
            known = kept.nodes.get(node)
            if known is not None and known[0] == state:
                answers.append(known[1])
            elif probe is not None and time.perf_counter() - started < budget:
                advice = probe.advise(node, kept.found)
                kept.nodes[node] = (state, advice)
                answers.append(advice)
            else:
                pending.append(node)
        report = summarise(kept.found, answers)
        report.version = version
        report.pending = pending
        return report


def node_advice(node: str) -> NodeAdvice:
    """One node's answer, asked about again only when its state changed."""
    with _LOCK:
        kept, probe, states, _ = _prepare([node])
        known = kept.nodes.get(node)
        if probe is None and known is not None:
            return known[1]
        assert probe is not None
        advice = probe.advise(node, kept.found)
        kept.nodes[node] = (states[node], advice)
        return advice


def is_known_node(name: str) -> bool:
    """A node the portal knows: a mirrored Node, or one drivers publish devices for (as the
    node pages count them)."""
    return Node.objects.filter(name=name).exists() or Device.objects.on_node(name).exists()


# --- how many devices of a request fit together (the claim preview) ---------------------------


@dataclass(slots=True)
class FitsTogether:
    """Per node, how many devices of one class and selectors it gives out together; the nodes
    not asked about yet (the budget ran out) are ``pending``."""

    nodes: dict[str, ShapeFit] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)

    @property
    def fits(self) -> int:
        return sum(fit.fits for fit in self.nodes.values())

    @property
    def capped(self) -> bool:
        return any(fit.capped for fit in self.nodes.values())


@dataclass(slots=True)
class _KeptFits:
    owner: AllocationIndex
    class_selectors: Any  # the class's own selectors when the answers were found
    nodes: dict[str, tuple[NodeState, ShapeFit]] = field(default_factory=dict)


_FITS: OrderedDict[tuple[str, tuple[str, ...]], _KeptFits] = OrderedDict()
FITS_KEPT = 64  # requests (class and selectors) whose answers are kept
# Its own lock: a preview does not wait for the advisor's page (seconds) to finish.
_FITS_LOCK = threading.Lock()


def fits_together(
    device_class: str,
    selectors: Iterable[str],
    nodes: Iterable[str],
    *,
    budget: float | None = None,
) -> FitsTogether:
    """How many devices of ``device_class`` passing ``selectors`` each of ``nodes`` gives out
    together: a claim for one of them allocated on the node and committed, again and again
    until it fails (:meth:`Probe.count`, how the advisor counts a MIG profile). Where devices
    share counters (MIG partitions and the GPUs they are carved from) that can be fewer than
    the free ones. Each node's answer is kept with the state it was found in, as the
    advisor's are; nodes still out of date after ``budget`` seconds (default: the
    ``CLAIMS_PREVIEW_FIT_BUDGET_MS`` setting) are ``pending``."""
    if budget is None:
        budget = settings.CLAIMS_PREVIEW_FIT_BUDGET_MS / 1000
    selectors = tuple(selectors)
    shape = Shape(device_class, ShapeKind.WHOLE, "one device", selectors=selectors)
    wanted = sorted(set(nodes))
    answer = FitsTogether()
    with _FITS_LOCK:
        current = index()
        with current.lock:
            current.catch_up(force=False)
            cluster = current.cluster
            assert cluster is not None
            found_class = cluster.classes.get(device_class)
            class_selectors = None if found_class is None else found_class.selectors
            key = (device_class, selectors)
            kept = _FITS.get(key)
            if kept is None or kept.owner is not current or kept.class_selectors != class_selectors:
                kept = _KeptFits(current, class_selectors)
            _FITS[key] = kept
            _FITS.move_to_end(key)
            while len(_FITS) > FITS_KEPT:
                _FITS.popitem(last=False)
            known = {node.name for node in cluster.nodes}
            wanted = [node for node in wanted if node in known]
            pools = {
                node: {(s.driver, s.pool_name) for s in cluster.inventory.slices_for_node(node)}
                for node in wanted
            }
            states = _states(current, cluster, pools, wanted)
            stale = {
                node for node in wanted if (kept.nodes.get(node) or (None,))[0] != states[node]
            }
            probe = Probe(scratch_copy(cluster), DEFAULT_TIMEOUT_SECONDS) if stale else None
        started = time.perf_counter()
        for node in wanted:
            if node not in stale:
                answer.nodes[node] = kept.nodes[node][1]
            elif probe is not None and time.perf_counter() - started < budget:
                fit = probe.count(shape, node, {})
                kept.nodes[node] = (states[node], fit)
                answer.nodes[node] = fit
            else:
                answer.pending.append(node)
    return answer
