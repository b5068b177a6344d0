"""A node's GPUs as they are wired: NUMA node → PCIe root → NVLink clique → GPU, each MIG GPU
with its partitions at their placements and the counters its held partitions use.

Everything comes from what the drivers publish (``devices/fixtures/README.md``): the standard
attributes ``resource.kubernetes.io/numaNode`` and ``pcieRoot``, an NVLink clique attribute
where the driver publishes one, ``parentUUID`` for partitions, and the ``memory-slice-N``
counters a partition consumes from its GPU's shared counter set (its placement). A level whose
attribute is absent groups its devices under *unknown*, so devices of a driver that publishes
none (the dra-example-driver) still have a place.

Pure over rows already fetched: ``node_topology`` asks the database nothing.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from devices.models import Device, DeviceState, SharedCounterSet
from dra.quantity import QuantityError, parse_quantity

__all__ = [
    "CLIQUE_ATTRIBUTES",
    "NUMA_ATTRIBUTES",
    "PCIE_ROOT_ATTRIBUTES",
    "Clique",
    "CounterUse",
    "GpuBox",
    "Holders",
    "NodeTopology",
    "NumaGroup",
    "Partition",
    "PcieRoot",
    "Reading",
    "node_topology",
]

STANDARD_DOMAIN = "resource.kubernetes.io"
# Attribute names of each level, in order of preference. Unqualified names are looked up in
# the device's driver domain too (``gpu.nvidia.com/cliqueID``).
NUMA_ATTRIBUTES = (f"{STANDARD_DOMAIN}/numaNode", "numaNode", "numa")
PCIE_ROOT_ATTRIBUTES = (f"{STANDARD_DOMAIN}/pcieRoot", "pcieRoot")
CLIQUE_ATTRIBUTES = ("cliqueID", "cliqueId", "nvlinkClique", "clique")
# Device types drawn on the topology (besides devices that publish a NUMA node or PCIe root):
# GPUs, and devices of drivers that publish no type (the dra-example-driver's GPUs).
DRAWN_TYPES = frozenset({"gpu", ""})
HELD_STATES = frozenset({DeviceState.ALLOCATED, DeviceState.SHARED})
_MEMORY_SLICE = re.compile(r"^memory-slice-(\d+)$")
# Counters drawn besides the memory slices (a placement): compute and memory.
_DRAWN_COUNTERS = frozenset({"multiprocessors", "memory"})


@dataclass
class Reading:
    """What the page shows of a device's latest reading: ``None`` utilisation is "no data"."""

    gpu_util: int | None
    memory_percent: float | None
    is_stale: bool
    is_simulated: bool

    @property
    def has_data(self) -> bool:
        return self.gpu_util is not None and not self.is_stale


@dataclass
class Partition:
    """A partition (MIG device) of a GPU at its placement: memory slices ``start`` to
    ``start + size - 1``; ``start`` is ``None`` when the driver publishes no placement."""

    device: Device
    profile: str
    start: int | None
    size: int
    reading: Reading | None = None
    claim: Any = None  # the holding claim the user may see (``visible_claim``), if any

    @property
    def is_held(self) -> bool:
        return self.device.state in HELD_STATES


@dataclass
class CounterUse:
    """How much of one shared counter the GPU's held devices consume."""

    name: str  # "Memory slices", "SMs", "Memory"
    used: int
    total: int
    unit: str = ""  # "bytes" for memory

    @property
    def percent(self) -> float:
        return 0.0 if not self.total else min(100.0, 100.0 * self.used / self.total)


@dataclass
class GpuBox:
    """A top-level device, its partitions (by placement) and its counters' use."""

    device: Device
    reading: Reading | None = None
    claims: list[Any] = field(default_factory=list)  # visible claims holding the device
    held_by_others: int = 0  # results of claims the user may not see
    partitions: list[Partition] = field(default_factory=list)
    counters: list[CounterUse] = field(default_factory=list)
    slice_count: int = 0  # memory slices of the GPU (0: placements unknown)

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partitions)

    @property
    def held_partitions(self) -> list[Partition]:
        return [p for p in self.partitions if p.is_held]


@dataclass
class Clique:
    key: str | None  # None: the devices publish no NVLink clique
    gpus: list[GpuBox] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"NVLink clique {self.key}" if self.key is not None else "NVLink clique unknown"


@dataclass
class PcieRoot:
    key: str | None
    cliques: list[Clique] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"PCIe root {self.key}" if self.key is not None else "PCIe root unknown"

    @property
    def gpus(self) -> list[GpuBox]:
        return [gpu for clique in self.cliques for gpu in clique.gpus]


@dataclass
class NumaGroup:
    key: str | None
    roots: list[PcieRoot] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"NUMA node {self.key}" if self.key is not None else "NUMA node unknown"

    @property
    def gpus(self) -> list[GpuBox]:
        return [gpu for root in self.roots for gpu in root.gpus]


@dataclass
class NodeTopology:
    numa_nodes: list[NumaGroup]
    others: list[Device]  # devices not drawn: IMEX channels, daemons, ...

    @property
    def gpus(self) -> list[GpuBox]:
        return [gpu for numa in self.numa_nodes for gpu in numa.gpus]

    @property
    def has_partitions(self) -> bool:
        return any(gpu.partitions for gpu in self.gpus)

    @property
    def has_cliques(self) -> bool:
        return any(c.key is not None for n in self.numa_nodes for r in n.roots for c in r.cliques)


def attribute_value(device: Device, names: Iterable[str]) -> str | None:
    """The first of ``names`` the device publishes, as text; unqualified names also in the
    driver's own domain. ``None`` when it publishes none of them."""
    for name in names:
        keys = (name,) if "/" in name else (name, f"{device.driver}/{name}")
        for key in keys:
            entry = device.attributes.get(key)
            if isinstance(entry, dict) and entry:
                value = next(iter(entry.values()))
                if value is not None and value != "":
                    return str(value)
    return None


def _sort_key(key: str | None) -> tuple[int, int, str]:
    """Unknown last; numbers in numeric order (NUMA 10 after 9)."""
    if key is None:
        return (2, 0, "")
    return (0, int(key), "") if key.isdigit() else (1, 0, key)


def _device_sort_key(device: Device) -> tuple[str, int, str]:
    """``gpu-2`` before ``gpu-10``."""
    match = re.search(r"(\d+)$", device.name)
    return (
        device.name[: match.start()] if match else device.name,
        int(match.group(1)) if match else -1,
        device.name,
    )


def _partition_order(partition: Partition) -> tuple[int, int, str, int]:
    """Largest first: by memory slices, then compute slices (``4g`` before ``3g``), then
    profile, then placement."""
    compute = partition.profile.split("g", 1)[0]
    return (
        -partition.size,
        -int(compute) if compute.isdigit() else 0,
        partition.profile,
        -1 if partition.start is None else partition.start,
    )


def _quantity(entry: Any) -> int:
    value = entry.get("value") if isinstance(entry, dict) else entry
    try:
        return parse_quantity(str(value)).ceil_int()
    except (QuantityError, ValueError, TypeError):
        return 0


def _is_drawn_counter(name: str) -> bool:
    return name in _DRAWN_COUNTERS or _MEMORY_SLICE.match(name) is not None


def _consumed(device: Device) -> dict[str, dict[str, int]]:
    """``{counter set: {counter: amount}}`` of the drawn counters the device consumes."""
    consumed: dict[str, dict[str, int]] = defaultdict(dict)
    for entry in device.consumes_counters:
        if not isinstance(entry, dict) or not isinstance(entry.get("counters"), dict):
            continue
        counters = consumed[str(entry.get("counterSet", ""))]
        for name, amount in entry["counters"].items():
            if _is_drawn_counter(name):
                counters[name] = _quantity(amount)
    return consumed


def _placement(device: Device, consumed: dict[str, dict[str, int]]) -> tuple[int | None, int]:
    """(first memory slice, number of slices) from the ``memory-slice-N`` counters the device
    consumes; from ``placementStart`` / ``placementSize`` attributes when a driver publishes
    those instead; ``(None, 1)`` when neither says."""
    slices = sorted(
        int(match.group(1))
        for counters in consumed.values()
        for name, amount in counters.items()
        if amount and (match := _MEMORY_SLICE.match(name))
    )
    if slices:
        return slices[0], slices[-1] - slices[0] + 1
    start = attribute_value(device, ("placementStart", "memorySliceStart"))
    size = attribute_value(device, ("placementSize", "memorySliceCount"))
    if start is not None and start.isdigit():
        return int(start), int(size) if size and size.isdigit() and int(size) > 0 else 1
    return None, 1


def _counter_use(
    gpu: Device,
    partitions: list[Device],
    counter_sets: Mapping[str, SharedCounterSet],
    consumed: Mapping[int, dict[str, dict[str, int]]],
) -> tuple[list[CounterUse], int]:
    """Memory slices, SMs and memory consumed by the GPU's held devices (itself or its
    partitions) of its counter set, and how many memory slices the set has."""
    sets = list(consumed[gpu.pk])
    counter_set = next((counter_sets[name] for name in sets if name in counter_sets), None)
    if counter_set is None:
        return [], 0
    totals = {
        name: _quantity(entry)
        for name, entry in counter_set.counters.items()
        if _is_drawn_counter(name)
    }
    used: dict[str, int] = defaultdict(int)
    for device in (gpu, *partitions):
        if device.state not in HELD_STATES:
            continue
        for name, amount in consumed[device.pk].get(counter_set.name, {}).items():
            used[name] += amount
    slice_names = [name for name in totals if _MEMORY_SLICE.match(name)]
    rows = []
    if slice_names:
        rows.append(
            CounterUse(
                "Memory slices",
                sum(1 for name in slice_names if used.get(name)),
                len(slice_names),
            )
        )
    for counter, label, unit in (("multiprocessors", "SMs", ""), ("memory", "Memory", "bytes")):
        if totals.get(counter):
            rows.append(CounterUse(label, used.get(counter, 0), totals[counter], unit))
    return rows, len(slice_names)


@dataclass
class Holders:
    """Who holds a device, as far as the user may know: the claims they may see (with
    ``namespace`` and ``name``), and how many results belong to claims they may not."""

    claims: list[Any] = field(default_factory=list)
    hidden: int = 0


def node_topology(
    devices: Iterable[Device],
    *,
    counter_sets: Iterable[SharedCounterSet] = (),
    readings: Mapping[tuple[str, str, str], Reading] | None = None,
    holders: Mapping[int, Holders] | None = None,
) -> NodeTopology:
    """Groups a node's devices into NUMA node → PCIe root → NVLink clique → GPU.

    Partitions (devices with a ``parentUUID``) go inside the GPU of that UUID when it is on
    the node, at their placement; a partition whose GPU is not published stays a box of its
    own. ``counter_sets`` are the shared counter sets of the devices' pools (for the counter
    use of MIG GPUs); ``readings`` map (driver, pool, device) to the latest reading;
    ``holders`` map device ids to who holds them (admin access holds nothing).
    """
    readings = readings or {}
    holders = holders or {}
    nobody = Holders()
    devices = sorted(devices, key=_device_sort_key)
    consumed = {device.pk: _consumed(device) for device in devices}
    by_uuid = {d.uuid: d for d in devices if d.uuid and not d.parent_uuid}
    sets = {(cs.driver, cs.pool_name, cs.name): cs for cs in counter_sets}
    children: dict[str, list[Device]] = defaultdict(list)
    tops: list[Device] = []
    others: list[Device] = []
    for device in devices:
        if device.parent_uuid and device.parent_uuid in by_uuid:
            children[device.parent_uuid].append(device)
        elif (
            device.device_type in DRAWN_TYPES
            or device.parent_uuid
            or attribute_value(device, NUMA_ATTRIBUTES + PCIE_ROOT_ATTRIBUTES) is not None
        ):
            tops.append(device)
        else:
            others.append(device)

    tree: dict[str | None, dict[str | None, dict[str | None, list[GpuBox]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for device in tops:
        partitions = children.get(device.uuid, []) if device.uuid else []
        pool_sets = {
            name: cs
            for (driver, pool, name), cs in sets.items()
            if (driver, pool) == (device.driver, device.pool_name)
        }
        counters, slice_count = _counter_use(device, partitions, pool_sets, consumed)
        held = holders.get(device.pk, nobody)
        box = GpuBox(
            device,
            reading=readings.get((device.driver, device.pool_name, device.name)),
            claims=held.claims,
            held_by_others=held.hidden,
            counters=counters,
            slice_count=slice_count,
        )
        for child in partitions:
            start, size = _placement(child, consumed[child.pk])
            child_claims = holders.get(child.pk, nobody).claims
            box.partitions.append(
                Partition(
                    child,
                    profile=attribute_value(child, ("profile",)) or child.name,
                    start=start,
                    size=size,
                    reading=readings.get((child.driver, child.pool_name, child.name)),
                    claim=child_claims[0] if child_claims else None,
                )
            )
        box.partitions.sort(key=_partition_order)
        numa = attribute_value(device, NUMA_ATTRIBUTES)
        root = attribute_value(device, PCIE_ROOT_ATTRIBUTES) or device.pcie_root or None
        clique = attribute_value(device, CLIQUE_ATTRIBUTES)
        tree[numa][root][clique].append(box)

    numa_nodes = []
    for numa in sorted(tree, key=_sort_key):
        group = NumaGroup(numa)
        for root in sorted(tree[numa], key=_sort_key):
            pcie = PcieRoot(root)
            for clique in sorted(tree[numa][root], key=_sort_key):
                pcie.cliques.append(Clique(clique, tree[numa][root][clique]))
            group.roots.append(pcie)
        numa_nodes.append(group)
    return NodeTopology(numa_nodes, others)
