"""What one scrape knows about a node: its GPUs, their MIG devices, links and processes.

Plain frozen dataclasses, produced by ``exporter.nvml`` and rendered by ``exporter.metrics``
(Prometheus) and ``exporter.inventory`` (JSON). ``values`` maps a dcgm-exporter field name
(``DCGM_FI_DEV_FB_USED``) to its value in dcgm-exporter's unit; a field NVML does not support
on that device is absent, never zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "GpuState",
    "MigDeviceState",
    "NodeState",
    "NvLinkState",
    "ProcessState",
    "TopologyPair",
    "dra_bus_id",
]


@dataclass(frozen=True)
class ProcessState:
    """A compute process on a GPU or MIG device; ids come from ``/proc/<pid>/cgroup``."""

    pid: int
    used_memory_bytes: int | None
    pod_uid: str = ""
    container_id: str = ""


@dataclass(frozen=True)
class MigDeviceState:
    """A MIG device: one compute instance inside one GPU instance of its parent GPU."""

    index: int
    uuid: str
    gpu_instance_id: int
    compute_instance_id: int
    profile: str
    profile_id: int
    placement_start: int
    placement_size: int
    values: dict[str, float] = field(default_factory=dict)
    processes: tuple[ProcessState, ...] = ()


@dataclass(frozen=True)
class NvLinkState:
    """One NVLink of a GPU and what is at its other end, when the link is up."""

    link: int
    is_active: bool
    remote_pci_bus_id: str = ""
    remote_type: str = ""


@dataclass(frozen=True)
class GpuState:
    """One GPU as of this scrape. ``error`` is set when NVML failed on it; then only
    ``index`` (and the identity cached from an earlier scrape, if any) is meaningful."""

    index: int
    uuid: str = ""
    name: str = ""
    pci_bus_id: str = ""
    minor_number: int | None = None
    mig_mode: int | None = None
    mig_mode_pending: int | None = None
    mig_devices: tuple[MigDeviceState, ...] = ()
    nvlinks: tuple[NvLinkState, ...] = ()
    values: dict[str, float] = field(default_factory=dict)
    processes: tuple[ProcessState, ...] = ()
    last_xid: int | None = None
    error: str = ""
    error_code: int | None = None

    @property
    def is_healthy(self) -> bool:
        return not self.error


@dataclass(frozen=True)
class TopologyPair:
    """How two GPUs reach each other: NVML's common PCIe ancestor and the NVLinks between them."""

    gpu: int
    peer: int
    level: int
    level_name: str
    nvlinks: int


@dataclass(frozen=True)
class NodeState:
    """Everything one scrape read. ``nvml_error`` is set when NVML is not initialised."""

    hostname: str
    driver_version: str = ""
    gpus: tuple[GpuState, ...] = ()
    topology: tuple[TopologyPair, ...] = ()
    nvml_error: str = ""


def dra_bus_id(pci_bus_id: str) -> str:
    """NVML's ``00000000:1B:00.0`` as the DRA attribute writes it: ``0000:1b:00.0``."""
    domain, _, rest = pci_bus_id.partition(":")
    if not rest:
        return pci_bus_id.lower()
    try:
        return f"{int(domain, 16):04x}:{rest.lower()}"
    except ValueError:
        return pci_bus_id.lower()
