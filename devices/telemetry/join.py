"""Joins readings to the mirrored DRA devices.

A whole GPU is found by its UUID (the driver's ``uuid`` attribute), else by node and PCI bus id.
A MIG device is found through its parent GPU: by the DRA device name our exporter's ``/devices``
gives for the GPU instance id, else (a Prometheus fed by dcgm-exporter knows only the instance
id and profile) as the one device of that profile under that parent — or, where the parent has
several, the one of them a claim holds. Anything else is left unmatched and counted: a wrong
join would put one tenant's load on another's claim.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from devices.telemetry.readings import Reading, normalise_pci_bus_id

__all__ = ["DeviceIndex", "IndexedDevice", "MigNames"]

# (hostname, parent GPU UUID, GPU instance id) → DRA device name, from exporters' /devices
MigNames = Mapping[tuple[str, str, int], str]
_HELD = ("allocated", "shared")


@dataclass(frozen=True)
class IndexedDevice:
    driver: str
    pool_name: str
    name: str
    node_name: str
    uuid: str
    parent_uuid: str
    pci_bus_id: str
    profile: str
    state: str
    # (driver, pool, device): computed once, read for every reading of every cycle.
    key: tuple[str, str, str] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", (self.driver, self.pool_name, self.name))


@dataclass
class DeviceIndex:
    by_uuid: dict[str, IndexedDevice] = field(default_factory=dict)
    by_pci: dict[tuple[str, str], IndexedDevice] = field(default_factory=dict)
    by_name: dict[tuple[str, str], IndexedDevice] = field(default_factory=dict)
    partitions: dict[str, list[IndexedDevice]] = field(default_factory=lambda: defaultdict(list))

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]]) -> DeviceIndex:
        """Rows with ``driver, pool_name, name, node_name, uuid, parent_uuid, pci_bus_id,
        device_type, profile, state`` (``Device`` columns and the ``profile`` attribute)."""
        index = cls()
        for row in rows:
            device = IndexedDevice(
                driver=row["driver"],
                pool_name=row["pool_name"],
                name=row["name"],
                node_name=row["node_name"] or "",
                uuid=row["uuid"] or "",
                parent_uuid=row["parent_uuid"] or "",
                pci_bus_id=normalise_pci_bus_id(row["pci_bus_id"] or ""),
                profile=str(row.get("profile") or ""),
                state=row.get("state") or "",
            )
            if device.node_name:
                index.by_name.setdefault((device.node_name, device.name), device)
            if device.parent_uuid:
                index.partitions[device.parent_uuid].append(device)
                continue
            if device.uuid:
                index.by_uuid.setdefault(device.uuid, device)
            if device.node_name and device.pci_bus_id:
                index.by_pci.setdefault((device.node_name, device.pci_bus_id), device)
        return index

    def find(
        self,
        reading: Reading,
        mig_names: MigNames | None = None,
        held: Container[tuple[str, str, str]] | None = None,
    ) -> IndexedDevice | None:
        """The device ``reading`` belongs to, or None. ``held``: the keys of the devices a claim
        holds now, where the index's own ``state`` may be older (a cached index)."""
        if reading.is_mig:
            return self._find_partition(reading, mig_names or {}, held)
        if reading.uuid and reading.uuid in self.by_uuid:
            return self.by_uuid[reading.uuid]
        return self.by_pci.get((reading.hostname, reading.pci_bus_id))

    def ambiguous(self, reading: Reading) -> bool:
        """A MIG reading only a claim's hold can place: several devices of its profile under its
        parent GPU (see the module's docstring)."""
        candidates = self.partitions.get(reading.uuid, [])
        return sum(1 for d in candidates if d.profile == reading.profile) > 1

    def _find_partition(
        self,
        reading: Reading,
        mig_names: MigNames,
        held: Container[tuple[str, str, str]] | None,
    ) -> IndexedDevice | None:
        assert reading.gpu_instance_id is not None
        name = mig_names.get((reading.hostname, reading.uuid, reading.gpu_instance_id))
        if name:
            device = self.by_name.get((reading.hostname, name))
            if device is not None and device.parent_uuid == reading.uuid:
                return device
        candidates = [
            d for d in self.partitions.get(reading.uuid, []) if d.profile == reading.profile
        ]
        if len(candidates) == 1:
            return candidates[0]
        holding = [
            d for d in candidates if (d.key in held if held is not None else d.state in _HELD)
        ]
        return holding[0] if len(holding) == 1 else None
