"""The fragmentation advisor: which MIG profiles and whole-GPU shapes still fit where.

Every answer comes from the allocator, none is guessed from free counts. A **shape** is one
claim: a MIG profile (a device of a partition class whose ``profile`` attribute names it), or
1, 2, 4 or 8 whole devices of a GPU class, multi-device shapes kept on one NVLink clique with a
``matchAttribute`` constraint when the class's devices publish a clique attribute (the
``nvlink`` preset of ``claims.requests.specs``; without one the devices only share a node, as every
allocation does). For each node and shape the claim is allocated on that node in a private
copy of the warm index's cluster, committed, and allocated again until it fails, at most
:data:`MAX_FITS` times; then the node's usage is put back before the next shape. So shared
counters (MIG memory slices), a whole GPU that blocks its partitions and vice versa, taints and
constraints count exactly as the allocator counts them, and the devices it chose say which GPUs
had room.

The answers' types and phrasing are ``claims.capacity.fragmentation_answers`` (re-exported here).
Everything here takes a :class:`dra.allocator.Cluster` and touches nothing else (no database);
``claims.capacity.fragmentation_reads`` runs it on the process's warm index and keeps each node's
answer until that node's usage changes (docs/fragmentation.md has the costs).
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from claims.capacity.fragmentation_answers import (
    MAX_FITS,
    ClassAdvice,
    ClassGrid,
    ClusterAdvice,
    LargestBlock,
    NodeAdvice,
    Shape,
    ShapeFit,
    ShapeKind,
    ShapeSummary,
    class_grids,
    counted,
)
from claims.requests.specs import resolve_preset
from dra.allocator import DEFAULT_TIMEOUT_SECONDS, AllocatedState, Cluster
from dra.model import ExactRequest, InvalidObject, parse_claim
from dra.model import ResourceClaim as ClaimModel

__all__ = [
    "MAX_FITS",
    "WHOLE_COUNTS",
    "ClassAdvice",
    "ClusterAdvice",
    "LargestBlock",
    "NodeAdvice",
    "Probe",
    "Shape",
    "ShapeFit",
    "ShapeKind",
    "ShapeSummary",
    "advise",
    "advise_node",
    "class_grids",
    "ClassGrid",
    "Advisable",
    "advisable",
    "summarise",
    "scratch_copy",
    "shapes_of",
]

WHOLE_COUNTS = (1, 2, 4, 8)
_PROFILE = re.compile(r"^(\d+)g\.(\d+)gb")


# --- the core ---------------------------------------------------------------------------------


def scratch_copy(cluster: Cluster) -> Cluster:
    """A private cluster over the same (immutable) inventory, with its own copy of what is in
    use: commits on it never reach ``cluster``. Take it under the index's lock."""
    allocated = AllocatedState(
        set(cluster.allocated.in_use),
        {key: dict(amounts) for key, amounts in cluster.allocated.consumed.items()},
    )
    scratch = Cluster(
        cluster.features, dict(cluster.classes), cluster.inventory, list(cluster.nodes), allocated
    )
    # The devices' CEL inputs depend on the inventory only: start from the ones already built.
    scratch.case().inputs = dict(cluster.case().inputs)
    return scratch


def _class_request(device_class: str) -> ExactRequest | None:
    spec = {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": device_class}}]}}
    try:
        claim = parse_claim(
            {"metadata": {"name": "c", "namespace": "portal", "uid": "c"}, "spec": spec}, "class"
        )
    except InvalidObject:
        return None
    return claim.requests[0].exactly


def _profile_order(profile: str) -> tuple[int, int, str]:
    match = _PROFILE.match(profile)
    if match is None:
        return (1 << 30, 0, profile)
    return (int(match.group(1)), int(match.group(2)), profile)


@dataclass(slots=True)
class _ClassDevices:
    """A class's devices by node (uids), and the shapes the advisor tries for it."""

    device_class: str
    kind: ShapeKind
    by_node: dict[str, list[int]]
    shapes: list[Shape]
    profiles_by_node: dict[str, set[str]] = field(default_factory=dict)
    clique_attribute: str | None = None


def _node_of(cluster: Cluster, uid: int) -> str | None:
    resource_slice, device = cluster.inventory.devices[uid]
    return resource_slice.node_name or device.node_name


def _classes(cluster: Cluster) -> list[_ClassDevices]:
    """The device classes worth advising on: partition classes (devices naming a
    ``profile``) and whole-device classes (devices with a ``memory`` capacity)."""
    found = []
    devices = cluster.inventory.devices
    for name in sorted(cluster.classes):
        request = _class_request(name)
        if request is None:
            continue
        passing, _ = cluster.request_matches(cluster.classes[name], request)
        by_node: dict[str, list[int]] = defaultdict(list)
        profiles: dict[str, str] = {}  # profile → driver
        profiles_by_node: dict[str, set[str]] = defaultdict(set)
        published: set[str] = set()
        has_memory = False
        for uid in sorted(passing):
            resource_slice, device = devices[uid]
            node = _node_of(cluster, uid)
            if node is None:
                continue  # a device several nodes share belongs to none of them here
            by_node[node].append(uid)
            profile = device.attribute("profile", resource_slice.driver)
            if profile is not None and isinstance(profile[1], str):
                profiles.setdefault(profile[1], resource_slice.driver)
                profiles_by_node[node].add(profile[1])
            has_memory = has_memory or "memory" in device.capacity
            published.update(
                key if "/" in key else f"{resource_slice.driver}/{key}" for key in device.attributes
            )
        if not by_node:
            continue
        if profiles:
            shapes = [
                Shape(
                    name,
                    ShapeKind.PARTITION,
                    profile,
                    profile=profile,
                    selectors=(
                        f"device.attributes[{json.dumps(driver)}].profile == {json.dumps(profile)}",
                    ),
                )
                for profile, driver in sorted(profiles.items(), key=lambda p: _profile_order(p[0]))
            ]
            found.append(
                _ClassDevices(name, ShapeKind.PARTITION, by_node, shapes, dict(profiles_by_node))
            )
        elif has_memory:
            clique = resolve_preset("nvlink", published)
            most = max(len(uids) for uids in by_node.values())
            shapes = [
                Shape(
                    name,
                    ShapeKind.WHOLE,
                    counted(count, "GPU"),
                    count=count,
                    match_attribute=clique if count > 1 else None,
                )
                for count in WHOLE_COUNTS
                if count <= most
            ]
            found.append(_ClassDevices(name, ShapeKind.WHOLE, by_node, shapes, {}, clique))
    return found


def shapes_of(cluster: Cluster) -> list[Shape]:
    """Every shape the advisor tries on ``cluster``, partition classes' profiles smallest
    first, then whole devices by count."""
    return [shape for found in _classes(cluster) for shape in found.shapes]


class Probe:
    """Trial allocations on one scratch cluster (:func:`scratch_copy`), each shape starting
    from the usage the cluster had when the probe was made."""

    def __init__(self, scratch: Cluster, timeout: float) -> None:
        self.scratch = scratch
        self.timeout = timeout
        self.baseline = AllocatedState(
            set(scratch.allocated.in_use),
            {key: dict(amounts) for key, amounts in scratch.allocated.consumed.items()},
        )
        self.calls = 0

    def advise(self, node: str, found: Advisable) -> NodeAdvice:
        """What fits on ``node``; ``found``: :func:`advisable` of the cluster."""
        return _advise_node(self, node, found)

    def allocate(self, claim: ClaimModel, node: str) -> Any:
        self.calls += 1
        return self.scratch.allocate([claim], node, self.timeout)

    def count(self, shape: Shape, node: str, parents: dict[str, str]) -> ShapeFit:
        """Allocate ``shape`` on ``node`` again and again (committing each) until it fails;
        then put the node's usage back."""
        fit = ShapeFit(shape)
        claim = shape.claim()
        gpus: Counter[str] = Counter()
        touched: set[tuple[str, str]] = set()
        try:
            while fit.fits < MAX_FITS:
                outcome = self.allocate(claim, node)
                if not outcome.allocations:
                    fit.error = outcome.error
                    break
                results = outcome.allocations[0].results
                if not fit.fits:
                    fit.first = [result.candidate.device.name for result in results]
                for result in results:
                    touched.add((result.candidate.pool.driver, result.candidate.pool.name))
                    if shape.kind is ShapeKind.PARTITION:
                        gpus[
                            _parent(result.candidate.pool.driver, result.candidate.device, parents)
                        ] += 1
                self.scratch.commit(outcome.allocations)
                fit.fits += 1
            fit.capped = fit.fits >= MAX_FITS
        finally:
            if touched:
                self.scratch.replace_usage(touched, self.baseline)
        fit.gpus = dict(sorted(gpus.items()))
        return fit

    def largest(self, shape: Shape, node: str, known: list[ShapeFit]) -> int:
        """The most devices one claim of ``shape``'s class (and constraint) gets on ``node``:
        between the largest count known to fit and the next known not to, by bisection."""
        fitting = [fit.shape.count for fit in known if fit.is_allocatable]
        low = max(fitting, default=0)
        singles = next((fit.fits for fit in known if fit.shape.count == 1), 0)
        failing = [fit.shape.count for fit in known if not fit.is_allocatable]
        high = min([singles, *(count - 1 for count in failing if count > low)])
        while low < high:
            middle = (low + high + 1) // 2
            outcome = self.allocate(shape.claim(middle), node)
            if outcome.allocations:
                low = middle
            else:
                high = middle - 1
        return low


def _parent(driver: str, device: Any, parents: dict[str, str]) -> str:
    """The GPU a partition is carved from: the device whose uuid its ``parentUUID`` names,
    else the counter set it consumes from, else itself."""
    parent = device.attribute("parentUUID", driver)
    if parent is not None and parent[1] in parents:
        return parents[parent[1]]
    if device.consumes_counters:
        return str(device.consumes_counters[0].counter_set)
    return str(device.name)


def _uuids(cluster: Cluster, uids: Iterable[int]) -> dict[str, str]:
    found = {}
    for uid in uids:
        resource_slice, device = cluster.inventory.devices[uid]
        uuid = device.attribute("uuid", resource_slice.driver)
        if uuid is not None and isinstance(uuid[1], str):
            found[uuid[1]] = device.name
    return found


@dataclass(slots=True)
class Advisable:
    """What the advisor looks at in a cluster, found once per inventory and device classes
    (no usage): per class its devices by node and its shapes, each GPU's name by uuid (the
    parents of partitions), and the pools each node's advised devices are in."""

    classes: list[_ClassDevices]
    parents: dict[str, str]
    pools: dict[str, set[tuple[str, str]]]

    @property
    def nodes(self) -> list[str]:
        return sorted({node for found in self.classes for node in found.by_node})

    @property
    def shapes(self) -> list[Shape]:
        return [shape for found in self.classes for shape in found.shapes]


def advisable(cluster: Cluster) -> Advisable:
    """:class:`Advisable` of ``cluster``: the classes' CEL results are the cluster's own,
    cached there (pass the warm index's cluster, not a scratch copy, to reuse them)."""
    classes = _classes(cluster)
    devices = cluster.inventory.devices
    pools: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for found in classes:
        for node, uids in found.by_node.items():
            for uid in uids:
                resource_slice = devices[uid][0]
                pools[node].add((resource_slice.driver, resource_slice.pool_name))
    all_uids = (
        uid for found in classes for node_uids in found.by_node.values() for uid in node_uids
    )
    return Advisable(classes, _uuids(cluster, all_uids), dict(pools))


def _advise_node(probe: Probe, node: str, found_classes: Advisable) -> NodeAdvice:
    started = time.perf_counter()
    calls = probe.calls
    parents = found_classes.parents
    advice = NodeAdvice(node)
    for found in found_classes.classes:
        uids = found.by_node.get(node)
        if not uids:
            continue
        entry = ClassAdvice(
            found.device_class, found.kind, len(uids), clique_attribute=found.clique_attribute
        )
        if found.kind is ShapeKind.PARTITION:
            here = found.profiles_by_node.get(node, set())
            entry.devices = len({_parent_of_uid(probe.scratch, uid, parents) for uid in uids})
            entry.fits = [
                probe.count(shape, node, parents) for shape in found.shapes if shape.profile in here
            ]
        else:
            entry.fits = [
                probe.count(shape, node, parents)
                for shape in found.shapes
                if shape.count <= len(uids)
            ]
            if entry.fits:
                entry.largest = probe.largest(found.shapes[-1], node, entry.fits)
        advice.classes.append(entry)
    advice.allocations = probe.calls - calls
    advice.seconds = time.perf_counter() - started
    return advice


def _parent_of_uid(cluster: Cluster, uid: int, parents: dict[str, str]) -> str:
    resource_slice, device = cluster.inventory.devices[uid]
    return _parent(resource_slice.driver, device, parents)


def advise_node(
    scratch: Cluster,
    node: str,
    *,
    found: Advisable | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> NodeAdvice:
    """What fits on ``node`` now. ``scratch`` is used for trial allocations (see
    :func:`scratch_copy`); its usage is the same afterwards. ``found``: :func:`advisable` of
    the cluster, when known."""
    found = found if found is not None else advisable(scratch)
    return _advise_node(Probe(scratch, timeout), node, found)


def advise(
    scratch: Cluster,
    nodes: Iterable[str] | None = None,
    *,
    found: Advisable | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> ClusterAdvice:
    """What fits on each node (every node publishing devices of an advised class, by name,
    unless ``nodes`` names them), summed up per shape and per whole-device class."""
    started = time.perf_counter()
    found = found if found is not None else advisable(scratch)
    wanted = sorted(set(nodes)) if nodes is not None else found.nodes
    probe = Probe(scratch, timeout)
    report = summarise(found, [_advise_node(probe, node, found) for node in wanted])
    report.allocations = probe.calls
    report.seconds = time.perf_counter() - started
    return report


def summarise(found: Advisable, nodes: list[NodeAdvice]) -> ClusterAdvice:
    """The cluster-wide answers from the nodes' (``allocations`` and ``seconds`` summed)."""
    report = ClusterAdvice(nodes=nodes)
    summaries = {shape.key: ShapeSummary(shape) for shape in found.shapes}
    best: dict[str, LargestBlock] = {
        item.device_class: LargestBlock(item.device_class, item.clique_attribute, 0, [])
        for item in found.classes
        if item.kind is ShapeKind.WHOLE
    }
    for node_advice in nodes:
        report.allocations += node_advice.allocations
        report.seconds += node_advice.seconds
        for entry in node_advice.classes:
            for fit in entry.fits:
                summary = summaries[fit.shape.key]
                summary.published_on += 1
                if fit.is_allocatable:
                    summary.nodes.append((node_advice.node, fit.fits))
                    summary.fits += fit.fits
                    summary.gpus += len(fit.gpus)
                    summary.capped = summary.capped or fit.capped
            block = best.get(entry.device_class)
            if block is not None and entry.largest:
                if entry.largest > block.count:
                    block.count, block.nodes = entry.largest, [node_advice.node]
                elif entry.largest == block.count:
                    block.nodes.append(node_advice.node)
    report.shapes = [summary for summary in summaries.values() if summary.published_on]
    report.largest = list(best.values())
    return report
