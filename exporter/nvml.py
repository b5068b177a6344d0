"""The one NVML session of the exporter: init once, keep handles, cache slow calls.

``NvmlReader.read()`` turns the node into a ``NodeState``. Contracts:

- ``nvmlInit`` runs once; when it fails the reader keeps the reason (``error``) and retries at
  most every ``retry_init_after`` seconds, so a driver that comes up after the exporter is
  picked up without a restart.
- Device handles are kept. Slow facts (name, UUID, PCI info, MIG layout, NVLink peers, the
  pairwise topology, the driver version) are cached for ``slow_call_ttl`` seconds; readings
  (memory, utilisation, temperature, power, clocks, ECC, energy, processes, XID events) are
  read on every scrape.
- ``NVML_ERROR_NOT_SUPPORTED`` means "this device has no such reading": the value is left out.
- Any other NVML error fails that GPU only: its ``GpuState`` carries the error, every other
  GPU is still read, and the failing GPU's handle and cached layout are dropped so the next
  scrape starts afresh (its identity is kept to label the error).
- ``read()`` holds a lock: concurrent scrapes are served one after the other.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable, Hashable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from exporter.processes import container_of
from exporter.state import (
    GpuState,
    MigDeviceState,
    NodeState,
    NvLinkState,
    ProcessState,
    TopologyPair,
    dra_bus_id,
)

__all__ = ["TOPOLOGY_LEVEL_NAMES", "NvmlReader", "SlowCallCache"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

MIB = 1024 * 1024

# nvmlGpuTopologyLevel_t, named as ``nvidia-smi topo -m`` names them.
TOPOLOGY_LEVEL_NAMES = {0: "SELF", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}

# nvmlNvLinkDeviceType_t.
_NVLINK_REMOTE_TYPES = {0: "gpu", 1: "ibmnpu", 2: "switch"}

# The identity of a GPU survives its failure: it labels the error.
_IDENTITY = "identity"


class SlowCallCache:
    """Values of slow NVML calls, each kept for ``ttl`` seconds. Errors are not cached."""

    def __init__(self, ttl: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._entries: dict[Hashable, tuple[float, Any]] = {}

    def get(self, key: Hashable, load: Callable[[], T]) -> T:
        now = self._clock()
        entry = self._entries.get(key)
        if entry is not None and entry[0] > now:
            value: T = entry[1]
            return value
        value = load()
        self._entries[key] = (now + self.ttl, value)
        return value

    def peek(self, key: Hashable) -> Any:
        """The cached value, even an expired one; ``None`` when there is none."""
        entry = self._entries.get(key)
        return None if entry is None else entry[1]

    def forget(self, predicate: Callable[[Hashable], bool]) -> None:
        for key in [key for key in self._entries if predicate(key)]:
            del self._entries[key]


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class NvmlReader:
    """Reads the node's GPUs through ``library`` (the ``pynvml`` module unless given)."""

    def __init__(
        self,
        *,
        hostname: str,
        library: Any | None = None,
        slow_call_ttl: float = 300.0,
        proc_root: Path = Path("/proc"),
        retry_init_after: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.hostname = hostname
        self.proc_root = proc_root
        self._library = library
        self._clock = clock
        self._retry_init_after = retry_init_after
        self._slow = SlowCallCache(slow_call_ttl, clock)
        self._lock = threading.Lock()
        self._initialised = False
        self._error = "NVML not initialised yet"
        self._last_init_attempt: float | None = None
        self._handles: dict[int, Any] = {}
        self._event_set: Any = None
        self._xid_registered: dict[int, bool] = {}
        self._last_xid: dict[int, int] = {}

    # -- session ----------------------------------------------------------------------------

    @property
    def nvml(self) -> Any:
        if self._library is None:
            self._library = importlib.import_module("pynvml")
        return self._library

    @property
    def is_initialised(self) -> bool:
        return self._initialised

    @property
    def error(self) -> str:
        """Why NVML is not usable; empty once it is initialised."""
        return "" if self._initialised else self._error

    def start(self) -> bool:
        """Initialise NVML unless it is, or was tried less than ``retry_init_after`` ago."""
        with self._lock:
            return self._start_locked()

    def _start_locked(self) -> bool:
        if self._initialised:
            return True
        now = self._clock()
        if (
            self._last_init_attempt is not None
            and now - self._last_init_attempt < self._retry_init_after
        ):
            return False
        self._last_init_attempt = now
        try:
            nvml = self.nvml
            nvml.nvmlInit()
        except Exception as error:  # noqa: BLE001 (a missing library is as fatal as a failed init)
            self._error = f"nvmlInit failed: {error}"
            logger.warning("%s", self._error)
            return False
        self._initialised = True
        self._error = ""
        try:
            self._event_set = nvml.nvmlEventSetCreate()
        except nvml.NVMLError as error:
            logger.info("XID events unavailable: %s", error)
        return True

    def close(self) -> None:
        with self._lock:
            if not self._initialised:
                return
            nvml = self.nvml
            try:
                if self._event_set is not None:
                    nvml.nvmlEventSetFree(self._event_set)
                nvml.nvmlShutdown()
            except nvml.NVMLError as error:
                logger.warning("nvmlShutdown failed: %s", error)
            self._initialised = False
            self._error = "NVML shut down"
            self._handles.clear()

    # -- one scrape -------------------------------------------------------------------------

    def read(self) -> NodeState:
        with self._lock:
            if not self._start_locked():
                return NodeState(hostname=self.hostname, nvml_error=self._error)
            nvml = self.nvml
            try:
                count = self._slow.get(("count",), nvml.nvmlDeviceGetCount)
                driver = self._slow.get(("driver",), nvml.nvmlSystemGetDriverVersion)
            except nvml.NVMLError as error:
                return NodeState(hostname=self.hostname, nvml_error=f"NVML: {error}")
            self._drain_xid_events()
            gpus = tuple(self._read_gpu_or_error(index) for index in range(count))
            return NodeState(
                hostname=self.hostname,
                driver_version=_text(driver),
                gpus=gpus,
                topology=self._topology(gpus),
            )

    def _read_gpu_or_error(self, index: int) -> GpuState:
        nvml = self.nvml
        try:
            return self._read_gpu(index)
        except nvml.NVMLError as error:
            logger.warning("GPU %d: %s", index, error)
            self._handles.pop(index, None)
            self._slow.forget(lambda key: _is_layout_of(key, index))
            identity = self._slow.peek((_IDENTITY, index)) or {}
            return GpuState(
                index=index,
                uuid=identity.get("uuid", ""),
                name=identity.get("name", ""),
                pci_bus_id=identity.get("pci_bus_id", ""),
                error=str(error),
                error_code=getattr(error, "value", None),
            )

    def _handle(self, index: int) -> Any:
        handle = self._handles.get(index)
        if handle is None:
            handle = self.nvml.nvmlDeviceGetHandleByIndex(index)
            self._handles[index] = handle
        return handle

    def _read_gpu(self, index: int) -> GpuState:
        nvml = self.nvml
        handle = self._handle(index)
        identity = self._slow.get((_IDENTITY, index), lambda: self._identity(handle))
        self._register_xid_events(index, handle)
        mig_mode, mig_pending = self._slow.get(("mig-mode", index), lambda: self._mig_mode(handle))
        mig_layout: list[tuple[Any, dict[str, Any]]] = []
        if mig_mode == nvml.NVML_DEVICE_MIG_ENABLE:
            mig_layout = self._slow.get(("mig", index), lambda: self._mig_layout(handle))
        mig_devices = tuple(
            MigDeviceState(
                **facts,
                values=self._memory_values(mig_handle),
                processes=self._processes(mig_handle),
            )
            for mig_handle, facts in mig_layout
        )
        return GpuState(
            index=index,
            uuid=identity["uuid"],
            name=identity["name"],
            pci_bus_id=identity["pci_bus_id"],
            minor_number=identity["minor_number"],
            mig_mode=mig_mode,
            mig_mode_pending=mig_pending,
            mig_devices=mig_devices,
            nvlinks=self._slow.get(("nvlink", index), lambda: self._nvlinks(handle)),
            values=self._values(handle),
            # With MIG enabled the processes are listed per MIG device.
            processes=() if mig_devices else self._processes(handle),
            last_xid=self._last_xid.get(index),
        )

    # -- slow facts -------------------------------------------------------------------------

    def _optional(self, call: Callable[..., T], *args: Any) -> T | None:
        """``call(*args)``, or ``None`` when NVML says the device does not support it."""
        nvml = self.nvml
        try:
            return call(*args)
        except nvml.NVMLError as error:
            if getattr(error, "value", None) == nvml.NVML_ERROR_NOT_SUPPORTED:
                return None
            raise

    def _identity(self, handle: Any) -> dict[str, Any]:
        nvml = self.nvml
        pci = nvml.nvmlDeviceGetPciInfo(handle)
        return {
            "uuid": _text(nvml.nvmlDeviceGetUUID(handle)),
            "name": _text(nvml.nvmlDeviceGetName(handle)),
            "pci_bus_id": _text(pci.busId),
            "minor_number": self._optional(nvml.nvmlDeviceGetMinorNumber, handle),
        }

    def _mig_mode(self, handle: Any) -> tuple[int | None, int | None]:
        modes = self._optional(self.nvml.nvmlDeviceGetMigMode, handle)
        return (None, None) if modes is None else (int(modes[0]), int(modes[1]))

    def _mig_layout(self, handle: Any) -> list[tuple[Any, dict[str, Any]]]:
        nvml = self.nvml
        layout = []
        for mig_index in range(nvml.nvmlDeviceGetMaxMigDeviceCount(handle)):
            try:
                mig_handle = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, mig_index)
            except nvml.NVMLError as error:
                if getattr(error, "value", None) == nvml.NVML_ERROR_NOT_FOUND:
                    continue
                raise
            gpu_instance_id = nvml.nvmlDeviceGetGpuInstanceId(mig_handle)
            info = nvml.nvmlGpuInstanceGetInfo(
                nvml.nvmlDeviceGetGpuInstanceById(handle, gpu_instance_id)
            )
            # NVML names a MIG device "<parent name> MIG <profile>", e.g. "… MIG 1g.10gb".
            name = _text(nvml.nvmlDeviceGetName(mig_handle))
            profile = name.rsplit(" MIG ", 1)[1] if " MIG " in name else ""
            facts = {
                "index": mig_index,
                "uuid": _text(nvml.nvmlDeviceGetUUID(mig_handle)),
                "gpu_instance_id": int(gpu_instance_id),
                "compute_instance_id": int(nvml.nvmlDeviceGetComputeInstanceId(mig_handle)),
                "profile": profile,
                "profile_id": int(info.profileId),
                "placement_start": int(info.placement.start),
                "placement_size": int(info.placement.size),
            }
            layout.append((mig_handle, facts))
        return layout

    def _nvlinks(self, handle: Any) -> tuple[NvLinkState, ...]:
        nvml = self.nvml
        links = []
        for link in range(nvml.NVML_NVLINK_MAX_LINKS):
            try:
                is_active = bool(nvml.nvmlDeviceGetNvLinkState(handle, link))
            except nvml.NVMLError as error:
                code = getattr(error, "value", None)
                if code == nvml.NVML_ERROR_NOT_SUPPORTED and link == 0:
                    break  # no NVLink on this GPU
                if code in (nvml.NVML_ERROR_NOT_SUPPORTED, nvml.NVML_ERROR_INVALID_ARGUMENT):
                    continue  # no such link
                raise
            if not is_active:
                links.append(NvLinkState(link=link, is_active=False))
                continue
            remote = _text(nvml.nvmlDeviceGetNvLinkRemotePciInfo(handle, link).busId)
            remote_type = self._optional(nvml.nvmlDeviceGetNvLinkRemoteDeviceType, handle, link)
            links.append(
                NvLinkState(
                    link=link,
                    is_active=True,
                    remote_pci_bus_id=remote,
                    remote_type=_NVLINK_REMOTE_TYPES.get(remote_type, "")
                    if remote_type is not None
                    else "",
                )
            )
        return tuple(links)

    def _topology(self, gpus: tuple[GpuState, ...]) -> tuple[TopologyPair, ...]:
        """Pairs of healthy GPUs: the common PCIe ancestor, and the NVLinks joining them."""
        nvml = self.nvml
        healthy = [gpu for gpu in gpus if gpu.is_healthy]
        by_bus_id = {dra_bus_id(gpu.pci_bus_id): gpu.index for gpu in healthy}
        pairs = []
        for position, gpu in enumerate(healthy):
            for peer in healthy[position + 1 :]:
                try:
                    level = self._slow.get(
                        ("topology", gpu.index, peer.index),
                        partial(self._common_ancestor, gpu.index, peer.index),
                    )
                except nvml.NVMLError as error:
                    logger.warning("topology GPU %d-%d: %s", gpu.index, peer.index, error)
                    continue
                nvlinks = sum(
                    1
                    for link in gpu.nvlinks
                    if link.is_active
                    and by_bus_id.get(dra_bus_id(link.remote_pci_bus_id)) == peer.index
                )
                pairs.append(
                    TopologyPair(
                        gpu=gpu.index,
                        peer=peer.index,
                        level=level,
                        level_name=TOPOLOGY_LEVEL_NAMES.get(level, str(level)),
                        nvlinks=nvlinks,
                    )
                )
        return tuple(pairs)

    def _common_ancestor(self, gpu: int, peer: int) -> int:
        handles = self._handles
        return int(self.nvml.nvmlDeviceGetTopologyCommonAncestor(handles[gpu], handles[peer]))

    # -- readings ---------------------------------------------------------------------------

    def _memory_values(self, handle: Any) -> dict[str, float]:
        memory = self._optional(self.nvml.nvmlDeviceGetMemoryInfo, handle)
        if memory is None:
            return {}
        return {
            "DCGM_FI_DEV_FB_TOTAL": memory.total // MIB,
            "DCGM_FI_DEV_FB_FREE": memory.free // MIB,
            "DCGM_FI_DEV_FB_USED": memory.used // MIB,
        }

    def _values(self, handle: Any) -> dict[str, float]:
        """A whole GPU's readings in dcgm-exporter's units (MiB, %, °C, W, MHz, mJ)."""
        nvml = self.nvml
        optional = self._optional
        values = self._memory_values(handle)
        utilization = optional(nvml.nvmlDeviceGetUtilizationRates, handle)
        if utilization is not None:
            values["DCGM_FI_DEV_GPU_UTIL"] = utilization.gpu
            values["DCGM_FI_DEV_MEM_COPY_UTIL"] = utilization.memory
        readings: list[tuple[str, Callable[..., Any], tuple[Any, ...], float]] = [
            (
                "DCGM_FI_DEV_GPU_TEMP",
                nvml.nvmlDeviceGetTemperature,
                (nvml.NVML_TEMPERATURE_GPU,),
                1,
            ),
            ("DCGM_FI_DEV_POWER_USAGE", nvml.nvmlDeviceGetPowerUsage, (), 1000),  # mW → W
            ("DCGM_FI_DEV_SM_CLOCK", nvml.nvmlDeviceGetClockInfo, (nvml.NVML_CLOCK_SM,), 1),
            ("DCGM_FI_DEV_MEM_CLOCK", nvml.nvmlDeviceGetClockInfo, (nvml.NVML_CLOCK_MEM,), 1),
            (
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                nvml.nvmlDeviceGetTotalEnergyConsumption,
                (),
                1,
            ),
        ]
        for field_name, call, args, divisor in readings:
            value = optional(call, handle, *args)
            if value is not None:
                values[field_name] = value / divisor if divisor != 1 else value
        corrected = nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED
        uncorrected = nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
        for field_name, error_type, counter_type in (
            ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", corrected, nvml.NVML_VOLATILE_ECC),
            ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", uncorrected, nvml.NVML_VOLATILE_ECC),
            ("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", corrected, nvml.NVML_AGGREGATE_ECC),
            ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", uncorrected, nvml.NVML_AGGREGATE_ECC),
        ):
            value = optional(nvml.nvmlDeviceGetTotalEccErrors, handle, error_type, counter_type)
            if value is None:
                break  # no ECC on this GPU (or ECC off): none of the four exists
            values[field_name] = value
        return values

    def _processes(self, handle: Any) -> tuple[ProcessState, ...]:
        found = self._optional(self.nvml.nvmlDeviceGetComputeRunningProcesses, handle)
        processes = []
        for process in found or ():
            pod_uid, container_id = container_of(int(process.pid), self.proc_root)
            used = process.usedGpuMemory
            processes.append(
                ProcessState(
                    pid=int(process.pid),
                    used_memory_bytes=None if used is None else int(used),
                    pod_uid=pod_uid,
                    container_id=container_id,
                )
            )
        return tuple(sorted(processes, key=lambda process: process.pid))

    # -- XID events -------------------------------------------------------------------------

    def _register_xid_events(self, index: int, handle: Any) -> None:
        """Once per GPU: ask for its XID events. A GPU that cannot report them gets no XID
        metric; one that can starts at 0, as dcgm-exporter's "last XID" does."""
        if self._event_set is None or index in self._xid_registered:
            return
        nvml = self.nvml
        try:
            nvml.nvmlDeviceRegisterEvents(
                handle, nvml.nvmlEventTypeXidCriticalError, self._event_set
            )
        except nvml.NVMLError as error:
            if getattr(error, "value", None) != nvml.NVML_ERROR_NOT_SUPPORTED:
                raise
            self._xid_registered[index] = False
            return
        self._xid_registered[index] = True
        self._last_xid.setdefault(index, 0)

    def _drain_xid_events(self) -> None:
        """Take every pending XID event without waiting; the last one per GPU is kept."""
        if self._event_set is None:
            return
        nvml = self.nvml
        uuid_to_index = {
            identity["uuid"]: index
            for index, registered in self._xid_registered.items()
            if registered and (identity := self._slow.peek((_IDENTITY, index)))
        }
        while True:
            try:
                event = nvml.nvmlEventSetWait(self._event_set, 0)
            except nvml.NVMLError as error:
                if getattr(error, "value", None) != nvml.NVML_ERROR_TIMEOUT:
                    logger.warning("XID events: %s", error)
                return
            if not event.eventType & nvml.nvmlEventTypeXidCriticalError:
                continue
            try:
                index = uuid_to_index.get(_text(nvml.nvmlDeviceGetUUID(event.device)))
            except nvml.NVMLError:
                index = None
            if index is not None:
                self._last_xid[index] = int(event.eventData)


def _is_layout_of(key: Hashable, index: int) -> bool:
    return isinstance(key, tuple) and len(key) >= 2 and key[0] != _IDENTITY and index in key[1:]
