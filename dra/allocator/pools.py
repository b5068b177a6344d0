"""The inventory of one allocation case, and gathering the resource pools visible from a node.

:class:`Inventory` parses the ResourceSlices once, numbers every device (``Device.uid``) and
indexes slices by node name, so gathering pools for one of 5,000 nodes only looks at that node's
slices plus the shared ones (``allNodes``, ``nodeSelector``, ``perDeviceNodeSelection``,
counter-only slices). Pool semantics follow dra-semantics §4: the highest generation wins,
incomplete and invalid pools are flagged, and pools come out sorted by (driver, pool name) with
slices sorted by name (the deterministic 1.36 order, used for every version).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from dra.features import Features
from dra.model import CounterSet, Device, Node, ResourceSlice

__all__ = ["Inventory", "Pool", "build_pool", "device_matches_node", "gather_pools"]


@dataclass(slots=True)
class Pool:
    driver: str
    name: str
    slices: list[ResourceSlice] = field(default_factory=list)  # device slices for the node
    other_slices: list[ResourceSlice] = field(default_factory=list)  # 1.35+: the rest of the pool
    counter_sets: dict[str, CounterSet] | None = None  # 1.35+: pool-scoped counter sets
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    has_binding_conditions: bool = False

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.name}"


class Inventory:
    """All slices of a case, numbered and indexed. Immutable after construction."""

    def __init__(self, slices: Sequence[ResourceSlice]) -> None:
        self.slices = list(slices)
        self.devices: list[tuple[ResourceSlice, Device]] = []
        self.by_node: dict[str, list[ResourceSlice]] = defaultdict(list)
        self.shared: list[ResourceSlice] = []
        self.by_pool: dict[tuple[str, str], list[ResourceSlice]] = defaultdict(list)
        for index, resource_slice in enumerate(self.slices):
            resource_slice.index = index
            for device in resource_slice.devices:
                device.uid = len(self.devices)
                self.devices.append((resource_slice, device))
            # As upstream's allocators (1.35+) index them: a slice with shared counters is
            # gathered for every node (the counters serve devices anywhere in the pool), so it
            # is shared even when it names a node.
            if resource_slice.node_name and not resource_slice.shared_counters:
                self.by_node[resource_slice.node_name].append(resource_slice)
            else:
                self.shared.append(resource_slice)
            self.by_pool[(resource_slice.driver, resource_slice.pool_name)].append(resource_slice)

    def slices_for_node(self, node_name: str) -> list[ResourceSlice]:
        return self.by_node.get(node_name, []) + self.shared


def device_matches_node(device: Device, node: Node) -> bool:
    """Per-device node selection: nodeName, then allNodes, then nodeSelector."""
    if device.node_name:
        return device.node_name == node.name
    if device.all_nodes:
        return True
    if device.node_selector is not None:
        return device.node_selector.matches(node)
    return False


def _slice_is_relevant(
    resource_slice: ResourceSlice, node: Node, features: Features
) -> bool | None:
    """True/False for known node selection; None when nothing known is set (ignored)."""
    if resource_slice.node_name:
        return resource_slice.node_name == node.name
    if resource_slice.all_nodes:
        return True
    if resource_slice.node_selector is not None:
        return resource_slice.node_selector.matches(node)
    if resource_slice.per_device_node_selection:
        return any(device_matches_node(device, node) for device in resource_slice.devices)
    return None


def _duplicate_device(slices: Iterable[ResourceSlice]) -> str | None:
    seen: set[str] = set()
    for resource_slice in slices:
        for device in resource_slice.devices:
            if device.name in seen:
                return f"duplicate device name {device.name}"
            seen.add(device.name)
    return None


def _counter_problem(
    counter_sets: dict[str, CounterSet], slices: Iterable[ResourceSlice]
) -> str | None:
    for resource_slice in slices:
        for device in resource_slice.devices:
            for consumption in device.consumes_counters:
                counter_set = counter_sets.get(consumption.counter_set)
                if counter_set is None:
                    return f"counter set {consumption.counter_set} not found"
                for name in consumption.counters:
                    if name not in counter_set.counters:
                        return f"counter {name} not found in counter set {counter_set.name}"
    return None


def build_pool(
    driver: str,
    name: str,
    slices: list[ResourceSlice],
    features: Features,
    all_slices: list[ResourceSlice] | None,
) -> Pool:
    slices.sort(key=lambda item: item.name)
    pool = Pool(driver, name)
    if features.is_1_34 or not features.partitionable_devices:
        device_slices = slices
        counter_slices: list[ResourceSlice] = []
    else:
        device_slices = [item for item in slices if not item.shared_counters]
        counter_slices = [item for item in slices if item.shared_counters]
    problem = _duplicate_device(device_slices)
    if problem is None and not features.is_1_34 and features.partitionable_devices:
        counter_sets: dict[str, CounterSet] = {}
        for counter_slice in counter_slices:
            for counter_set in counter_slice.shared_counters:
                if counter_set.name in counter_sets:
                    problem = f"duplicate counter set name {counter_set.name}"
                counter_sets[counter_set.name] = counter_set
        problem = problem or _counter_problem(counter_sets, slices)
        pool.counter_sets = counter_sets
        if problem is None and all_slices is not None and len(all_slices) != len(slices):
            names = {item.name for item in slices}
            pool.other_slices = [
                item for item in all_slices if item.name not in names and not item.shared_counters
            ]
            problem = _counter_problem(counter_sets, pool.other_slices)
    if problem is not None:
        pool.invalid = True
        pool.invalid_reason = problem
        return pool
    pool.slices = device_slices
    pool.has_binding_conditions = any(
        device.binding_conditions for item in device_slices for device in item.devices
    )
    return pool


def gather_pools(inventory: Inventory, node: Node, features: Features) -> list[Pool]:
    """The pools whose devices the node can use, in allocation order."""
    newest_1_35 = not features.is_1_34
    grouped: dict[tuple[str, str], list[ResourceSlice]] = {}
    for resource_slice in inventory.slices_for_node(node.name):
        if not features.partitionable_devices and (
            resource_slice.per_device_node_selection is not None
            or (newest_1_35 and resource_slice.shared_counters)
        ):
            continue
        if newest_1_35 and features.partitionable_devices and resource_slice.shared_counters:
            relevant: bool | None = True
        else:
            relevant = _slice_is_relevant(resource_slice, node, features)
        if not relevant:
            continue
        key = (resource_slice.driver, resource_slice.pool_name)
        existing = grouped.get(key)
        if existing is None or resource_slice.generation > existing[0].generation:
            grouped[key] = [resource_slice]
        elif resource_slice.generation == existing[0].generation:
            existing.append(resource_slice)
    pools: list[Pool] = []
    for (driver, name), slices in sorted(grouped.items()):
        expected = slices[0].resource_slice_count
        if len(slices) == expected:
            pools.append(build_pool(driver, name, slices, features, None))
            continue
        if features.is_1_34:
            pool = build_pool(driver, name, slices, features, None)
            pool.incomplete = True
            pools.append(pool)
            continue
        generation = slices[0].generation
        everything = inventory.by_pool.get((driver, name), [])
        if any(item.generation > generation for item in everything):
            continue  # obsolete: the driver is publishing a newer generation elsewhere
        same_generation = [item for item in everything if item.generation == generation]
        if len(same_generation) != expected:
            pools.append(Pool(driver, name, incomplete=True))
            continue
        pools.append(build_pool(driver, name, slices, features, same_generation))
    if features.newest_variant:
        pools.sort(key=lambda pool: pool.has_binding_conditions)
    return pools
