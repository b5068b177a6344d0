"""A fake ``pynvml``: the NVML calls the exporter makes, answered from described GPUs.

It stands in at the pynvml boundary only (passed as ``NvmlReader(library=...)`` or put in
``sys.modules["pynvml"]``): same function names, same constants, errors raised as
``NVMLError`` carrying NVML's code in ``.value``. Behaviour follows NVML where the exporter
relies on it: ``NVML_ERROR_NOT_SUPPORTED`` for a reading a device lacks (utilisation on a GPU
in MIG mode, everything but memory and processes on a MIG device), ``NOT_FOUND`` for an empty
MIG slot, ``INVALID_ARGUMENT`` past a GPU's last NVLink, ``TIMEOUT`` from an empty event set,
PCI bus ids as NVML writes them (``00000000:1B:00.0``), power in mW, memory in bytes:
``nvmlDeviceGetMemoryInfo(handle, version=nvmlMemory_v2)`` answers version 2 (total, reserved,
free, used without the reserve) and without ``version`` version 1 (used includes the reserve),
as pynvml does; ``FakeNvml(memory_v2=False)`` is a driver without version 2 (pynvml raises
``FUNCTION_NOT_FOUND`` when the library lacks ``nvmlDeviceGetMemoryInfo_v2``). Every call is
counted in ``calls`` (by function name) so tests can pin what is cached.

Scenarios: ``mixed_node()`` (an A100 with two MIG GPU instances, an NVLink pair of H100 NVL
and a GPU that is lost), ``dgx_h100_node()`` (8 H100 SXM on NVSwitches, the benchmark) and
``h200_capture(moment)`` (the real H200 of ``golden/h200-driver-580/``, replaying its readings).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

MIB = 1024 * 1024

# pynvml's values (tests/exporter/test_fake_nvml.py checks them against the real module).
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25
NVML_ERROR_UNKNOWN = 999
nvmlMemory_v2 = 0x02000028  # noqa: N816 - pynvml's name

ERROR_STRINGS = {
    NVML_ERROR_UNINITIALIZED: "Uninitialized",
    NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_NOT_FOUND: "Not Found",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_TIMEOUT: "Timeout",
    NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
    NVML_ERROR_GPU_IS_LOST: "GPU is lost",
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH: "Argument version mismatch",
    NVML_ERROR_UNKNOWN: "Unknown Error",
}


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return ERROR_STRINGS.get(self.value, f"NVML error {self.value}")


@dataclass
class FakeMig:
    uuid: str
    profile: str
    profile_id: int
    gpu_instance_id: int
    placement_start: int
    placement_size: int
    memory_total_mib: float
    memory_used_mib: float
    compute_instance_id: int = 0
    memory_reserved_mib: float = 0
    processes: list[tuple[int, int | None]] = field(default_factory=list)


@dataclass
class FakeLink:
    is_active: bool
    remote_bus_id: str = ""
    remote_type: int = 0  # NVML_NVLINK_DEVICE_TYPE_GPU; 2 is an NVSwitch


@dataclass
class FakeGpu:
    name: str
    uuid: str
    bus_id: str
    memory_total_mib: float
    # Used by processes (NVML v2's ``used``); the driver's reserve is apart (v1 adds it to used).
    memory_used_mib: float = 0
    memory_reserved_mib: float = 0
    utilization: tuple[int, int] = (0, 0)
    temperature: int = 30
    power_mw: int = 70_000
    clocks: tuple[int, int] = (1980, 2619)  # SM, memory (MHz)
    energy_mj: int = 0
    ecc: tuple[int, int, int, int] | None = (0, 0, 0, 0)  # SBE vol, DBE vol, SBE agg, DBE agg
    mig_mode: tuple[int, int] | None = (0, 0)
    migs: dict[int, FakeMig] = field(default_factory=dict)  # MIG slot → device
    max_migs: int = 7
    nvlinks: list[FakeLink] | None = None  # None: no NVLink at all
    processes: list[tuple[int, int | None]] = field(default_factory=list)
    xid_supported: bool = True
    fail_code: int | None = None  # every call on this GPU raises it
    unsupported: set[str] = field(default_factory=set)  # calls answering NOT_SUPPORTED


@dataclass(frozen=True)
class Handle:
    gpu: int
    mig: int | None = None


class FakeNvml:
    """The fake module. Attributes named as pynvml's; ``calls`` counts every call."""

    NVMLError = NVMLError
    NVML_ERROR_UNINITIALIZED = NVML_ERROR_UNINITIALIZED
    NVML_ERROR_INVALID_ARGUMENT = NVML_ERROR_INVALID_ARGUMENT
    NVML_ERROR_NOT_SUPPORTED = NVML_ERROR_NOT_SUPPORTED
    NVML_ERROR_NOT_FOUND = NVML_ERROR_NOT_FOUND
    NVML_ERROR_DRIVER_NOT_LOADED = NVML_ERROR_DRIVER_NOT_LOADED
    NVML_ERROR_TIMEOUT = NVML_ERROR_TIMEOUT
    NVML_ERROR_FUNCTION_NOT_FOUND = NVML_ERROR_FUNCTION_NOT_FOUND
    NVML_ERROR_GPU_IS_LOST = NVML_ERROR_GPU_IS_LOST
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = NVML_ERROR_ARGUMENT_VERSION_MISMATCH
    nvmlMemory_v2 = nvmlMemory_v2
    NVML_DEVICE_MIG_ENABLE = 1
    NVML_NVLINK_MAX_LINKS = 36
    NVML_TEMPERATURE_GPU = 0
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
    NVML_VOLATILE_ECC = 0
    NVML_AGGREGATE_ECC = 1
    nvmlEventTypeXidCriticalError = 0x8

    def __init__(
        self,
        gpus: list[FakeGpu],
        topology: dict[tuple[int, int], int] | None = None,
        *,
        driver_version: str = "580.126.20",
        init_error: int | None = None,
        memory_v2: bool = True,
    ) -> None:
        self.gpus = gpus
        self.memory_v2 = memory_v2
        self.topology = topology or {}
        self.driver_version = driver_version
        self.init_error = init_error
        self.initialised = False
        self.calls: Counter[str] = Counter()
        self.registered: set[int] = set()
        self.pending_xids: list[tuple[int, int]] = []  # (GPU index, XID)

    # -- plumbing ---------------------------------------------------------------------------

    def _enter(self, call: str, handle: Handle | None = None) -> FakeGpu | None:
        self.calls[call] += 1
        if not self.initialised:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)
        if handle is None:
            return None
        gpu = self.gpus[handle.gpu]
        if gpu.fail_code is not None:
            raise NVMLError(gpu.fail_code)
        if call in gpu.unsupported:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return gpu

    def _gpu(self, call: str, handle: Handle) -> FakeGpu:
        gpu = self._enter(call, handle)
        assert gpu is not None
        return gpu

    def _whole_gpu(self, call: str, handle: Handle) -> FakeGpu:
        """A reading that exists only for a whole GPU, not for a MIG device."""
        gpu = self._gpu(call, handle)
        if handle.mig is not None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return gpu

    # -- session ----------------------------------------------------------------------------

    def nvmlInit(self) -> None:
        self.calls["nvmlInit"] += 1
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")
        self.initialised = False

    def nvmlSystemGetDriverVersion(self) -> str:
        self._enter("nvmlSystemGetDriverVersion")
        return self.driver_version

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Handle:
        self._enter("nvmlDeviceGetHandleByIndex")
        if not 0 <= index < len(self.gpus):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return Handle(index)

    # -- identity ---------------------------------------------------------------------------

    def nvmlDeviceGetName(self, handle: Handle) -> str:
        gpu = self._gpu("nvmlDeviceGetName", handle)
        if handle.mig is not None:
            return f"{gpu.name} MIG {gpu.migs[handle.mig].profile}"
        return gpu.name

    def nvmlDeviceGetUUID(self, handle: Handle) -> str:
        gpu = self._gpu("nvmlDeviceGetUUID", handle)
        return gpu.migs[handle.mig].uuid if handle.mig is not None else gpu.uuid

    def nvmlDeviceGetPciInfo(self, handle: Handle) -> Any:
        gpu = self._gpu("nvmlDeviceGetPciInfo", handle)
        return SimpleNamespace(busId=gpu.bus_id.encode())  # a char array in pynvml: bytes

    def nvmlDeviceGetMinorNumber(self, handle: Handle) -> int:
        self._whole_gpu("nvmlDeviceGetMinorNumber", handle)
        return handle.gpu

    # -- readings ---------------------------------------------------------------------------

    def nvmlDeviceGetMemoryInfo(self, handle: Handle, version: int | None = None) -> Any:
        if version and not self.memory_v2:
            self.calls["nvmlDeviceGetMemoryInfo"] += 1
            raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND)
        gpu = self._gpu("nvmlDeviceGetMemoryInfo", handle)
        found: FakeGpu | FakeMig = gpu.migs[handle.mig] if handle.mig is not None else gpu
        total = round(found.memory_total_mib * MIB)
        reserved = round(found.memory_reserved_mib * MIB)
        used = round(found.memory_used_mib * MIB)
        free = total - reserved - used
        if not version:
            return SimpleNamespace(total=total, free=free, used=used + reserved)
        if version != nvmlMemory_v2:
            raise NVMLError(NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        return SimpleNamespace(
            version=version, total=total, reserved=reserved, free=free, used=used
        )

    def nvmlDeviceGetUtilizationRates(self, handle: Handle) -> Any:
        gpu = self._whole_gpu("nvmlDeviceGetUtilizationRates", handle)
        if gpu.mig_mode is not None and gpu.mig_mode[0] == 1:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return SimpleNamespace(gpu=gpu.utilization[0], memory=gpu.utilization[1])

    def nvmlDeviceGetTemperature(self, handle: Handle, sensor: int) -> int:
        return self._whole_gpu("nvmlDeviceGetTemperature", handle).temperature

    def nvmlDeviceGetPowerUsage(self, handle: Handle) -> int:
        return self._whole_gpu("nvmlDeviceGetPowerUsage", handle).power_mw

    def nvmlDeviceGetClockInfo(self, handle: Handle, clock: int) -> int:
        gpu = self._whole_gpu("nvmlDeviceGetClockInfo", handle)
        return gpu.clocks[0] if clock == self.NVML_CLOCK_SM else gpu.clocks[1]

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Handle) -> int:
        return self._whole_gpu("nvmlDeviceGetTotalEnergyConsumption", handle).energy_mj

    def nvmlDeviceGetTotalEccErrors(self, handle: Handle, error_type: int, counter: int) -> int:
        gpu = self._whole_gpu("nvmlDeviceGetTotalEccErrors", handle)
        if gpu.ecc is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return gpu.ecc[counter * 2 + error_type]

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Handle) -> list[Any]:
        gpu = self._gpu("nvmlDeviceGetComputeRunningProcesses", handle)
        found = gpu.migs[handle.mig].processes if handle.mig is not None else gpu.processes
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in found]

    # -- MIG --------------------------------------------------------------------------------

    def nvmlDeviceGetMigMode(self, handle: Handle) -> list[int]:
        gpu = self._whole_gpu("nvmlDeviceGetMigMode", handle)
        if gpu.mig_mode is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return list(gpu.mig_mode)

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: Handle) -> int:
        return self._whole_gpu("nvmlDeviceGetMaxMigDeviceCount", handle).max_migs

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: Handle, index: int) -> Handle:
        gpu = self._whole_gpu("nvmlDeviceGetMigDeviceHandleByIndex", handle)
        if index not in gpu.migs:
            raise NVMLError(NVML_ERROR_NOT_FOUND)
        return Handle(handle.gpu, index)

    def nvmlDeviceGetGpuInstanceId(self, handle: Handle) -> int:
        gpu = self._gpu("nvmlDeviceGetGpuInstanceId", handle)
        if handle.mig is None:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return gpu.migs[handle.mig].gpu_instance_id

    def nvmlDeviceGetComputeInstanceId(self, handle: Handle) -> int:
        gpu = self._gpu("nvmlDeviceGetComputeInstanceId", handle)
        if handle.mig is None:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return gpu.migs[handle.mig].compute_instance_id

    def nvmlDeviceGetGpuInstanceById(self, handle: Handle, gpu_instance_id: int) -> Any:
        gpu = self._whole_gpu("nvmlDeviceGetGpuInstanceById", handle)
        for mig in gpu.migs.values():
            if mig.gpu_instance_id == gpu_instance_id:
                return mig
        raise NVMLError(NVML_ERROR_NOT_FOUND)

    def nvmlGpuInstanceGetInfo(self, instance: FakeMig) -> Any:
        self._enter("nvmlGpuInstanceGetInfo")
        return SimpleNamespace(
            id=instance.gpu_instance_id,
            profileId=instance.profile_id,
            placement=SimpleNamespace(start=instance.placement_start, size=instance.placement_size),
        )

    # -- NVLink and topology ----------------------------------------------------------------

    def _link(self, call: str, handle: Handle, link: int) -> FakeLink:
        gpu = self._whole_gpu(call, handle)
        if gpu.nvlinks is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        if not 0 <= link < len(gpu.nvlinks):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return gpu.nvlinks[link]

    def nvmlDeviceGetNvLinkState(self, handle: Handle, link: int) -> int:
        return int(self._link("nvmlDeviceGetNvLinkState", handle, link).is_active)

    def nvmlDeviceGetNvLinkRemotePciInfo(self, handle: Handle, link: int) -> Any:
        found = self._link("nvmlDeviceGetNvLinkRemotePciInfo", handle, link)
        return SimpleNamespace(busId=found.remote_bus_id.encode())

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle: Handle, link: int) -> int:
        return self._link("nvmlDeviceGetNvLinkRemoteDeviceType", handle, link).remote_type

    def nvmlDeviceGetTopologyCommonAncestor(self, first: Handle, second: Handle) -> int:
        self._whole_gpu("nvmlDeviceGetTopologyCommonAncestor", first)
        self._whole_gpu("nvmlDeviceGetTopologyCommonAncestor", second)
        self.calls["nvmlDeviceGetTopologyCommonAncestor"] -= 1  # one call, two checks
        pair = (min(first.gpu, second.gpu), max(first.gpu, second.gpu))
        return self.topology.get(pair, 50)

    # -- events -----------------------------------------------------------------------------

    def nvmlEventSetCreate(self) -> str:
        self._enter("nvmlEventSetCreate")
        return "event-set"

    def nvmlEventSetFree(self, event_set: str) -> None:
        self._enter("nvmlEventSetFree")

    def nvmlDeviceRegisterEvents(self, handle: Handle, types: int, event_set: str) -> None:
        gpu = self._whole_gpu("nvmlDeviceRegisterEvents", handle)
        if not gpu.xid_supported:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        self.registered.add(handle.gpu)

    def nvmlEventSetWait(self, event_set: str, timeout_ms: int) -> Any:
        self._enter("nvmlEventSetWait")
        while self.pending_xids:
            index, xid = self.pending_xids.pop(0)
            if index in self.registered:
                return SimpleNamespace(
                    device=Handle(index),
                    eventType=self.nvmlEventTypeXidCriticalError,
                    eventData=xid,
                    gpuInstanceId=0xFFFFFFFF,
                    computeInstanceId=0xFFFFFFFF,
                )
        raise NVMLError(NVML_ERROR_TIMEOUT)


# -- scenarios ----------------------------------------------------------------------------------


def a100_with_two_gpu_instances() -> FakeGpu:
    """The A100 of ``devices/fixtures/nvidia-a100-mig.json`` in MIG mode with a 3g.20gb and a
    2g.10gb GPU instance (placements that fixture's device names use: 9-4 and 14-0)."""
    return FakeGpu(
        name="NVIDIA A100-SXM4-40GB",
        uuid="GPU-5c7667be-08e3-6043-a2cb-0333253223b9",
        bus_id="00000000:07:00.0",
        memory_total_mib=40960,
        memory_used_mib=12800,
        memory_reserved_mib=421,
        temperature=41,
        power_mw=88_512,
        clocks=(1410, 1215),
        energy_mj=9_876_543_210,
        ecc=(0, 0, 3, 0),
        mig_mode=(1, 1),
        migs={
            0: FakeMig(
                uuid="MIG-2a8a1f5c-3d0f-5b0b-9f36-6a3c1c7d4e21",
                profile="3g.20gb",
                profile_id=9,
                gpu_instance_id=2,
                placement_start=4,
                placement_size=4,
                memory_total_mib=20096,
                memory_used_mib=10240,
                processes=[(5151, 10_200 * MIB)],
            ),
            1: FakeMig(
                uuid="MIG-7e4d9c0b-61a2-5f3e-8c5d-2b9e0f1a3c44",
                profile="2g.10gb",
                profile_id=14,
                gpu_instance_id=5,
                placement_start=0,
                placement_size=2,
                memory_total_mib=9856,
                memory_used_mib=13,
            ),
        },
        nvlinks=None,  # NVLink answers NOT_SUPPORTED here, covering that path
    )


def h100_nvl(uuid: str, bus_id: str, peer_bus_id: str, **overrides: Any) -> FakeGpu:
    """An H100 NVL bridged to its peer: links 0–3 up to the peer, link 4 down."""
    links = [FakeLink(True, peer_bus_id) for _ in range(4)] + [FakeLink(False)]
    settings: dict[str, Any] = {
        "name": "NVIDIA H100 NVL",
        "uuid": uuid,
        "bus_id": bus_id,
        "memory_total_mib": 95830,
        "memory_used_mib": 0,
        "memory_reserved_mib": 502,
        "mig_mode": (0, 0),
        "nvlinks": links,
    }
    settings.update(overrides)
    return FakeGpu(**settings)


def mixed_node() -> FakeNvml:
    """GPU 0: A100 in MIG mode; GPUs 1–2: an NVLink pair of H100 NVL; GPU 3: lost."""
    first, second = "00000000:1B:00.0", "00000000:43:00.0"
    gpus = [
        a100_with_two_gpu_instances(),
        h100_nvl(
            "GPU-becccfc8-9252-9f2f-583e-4eeaaac45350",
            first,
            second,
            memory_used_mib=21504,
            utilization=(87, 41),
            temperature=58,
            power_mw=312_450,
            energy_mj=123_456_789,
            processes=[(4242, 20 * 1024 * MIB), (4343, 1024 * MIB)],
        ),
        h100_nvl(
            "GPU-59973a93-bdfe-c7ce-0063-bb62d4ca91d7",
            second,
            first,
            temperature=33,
            power_mw=61_250,
            energy_mj=98_765_432,
            clocks=(345, 2619),
        ),
        FakeGpu(
            name="NVIDIA H100 NVL",
            uuid="GPU-49b0761a-a1aa-2a9b-bd41-4344bf0cdf4a",
            bus_id="00000000:52:00.0",
            memory_total_mib=95830,
            fail_code=NVML_ERROR_GPU_IS_LOST,
        ),
    ]
    topology = {(0, 1): 50, (0, 2): 50, (1, 2): 40}
    return FakeNvml(gpus, topology)


DGX_H100 = [  # uuid, PCI bus id as NVML writes it: devices/fixtures/nvidia-dgx-h100.json
    ("GPU-becccfc8-9252-9f2f-583e-4eeaaac45350", "00000000:1B:00.0"),
    ("GPU-59973a93-bdfe-c7ce-0063-bb62d4ca91d7", "00000000:43:00.0"),
    ("GPU-49b0761a-a1aa-2a9b-bd41-4344bf0cdf4a", "00000000:52:00.0"),
    ("GPU-aecf293c-87c5-71ec-d9cf-9029d17dfb4c", "00000000:61:00.0"),
    ("GPU-48e0171f-a6de-3477-8b9f-45a630e909c7", "00000000:9D:00.0"),
    ("GPU-c8e083e6-b8d7-1a75-5d4d-ece30fbbe809", "00000000:C3:00.0"),
    ("GPU-1b09a7dc-39e3-5af8-56d3-ae9629bac30f", "00000000:D1:00.0"),
    ("GPU-80662539-1869-c2e2-c50c-6445c946aff6", "00000000:DF:00.0"),
]


def dgx_h100_node() -> FakeNvml:
    """A DGX H100: 8 H100 SXM, 18 NVLinks each to the 4 NVSwitches, NUMA 0 and 1 halves."""
    switches = [f"00000000:{bus:02X}:00.0" for bus in (0x05, 0x06, 0x07, 0x08)]
    gpus = [
        FakeGpu(
            name="NVIDIA H100 80GB HBM3",
            uuid=uuid,
            bus_id=bus_id,
            memory_total_mib=81559,
            memory_used_mib=40_000 + 1000 * index,
            utilization=(90 - index, 40 + index),
            temperature=50 + index,
            power_mw=500_000 + 1000 * index,
            energy_mj=10**9 + index,
            mig_mode=(0, 0),
            nvlinks=[FakeLink(True, switches[link % 4], 2) for link in range(18)],
            processes=[(10_000 + index, 39_000 * MIB)],
        )
        for index, (uuid, bus_id) in enumerate(DGX_H100)
    ]
    topology = {(a, b): 40 if (a < 4) == (b < 4) else 50 for a in range(8) for b in range(a + 1, 8)}
    return FakeNvml(gpus, topology)


# The real H200 of golden/h200-driver-580/ (driver 580.159.04), at the moments it was read.
# Memory in MiB as NVML's bytes would floor to the capture's figures: the reserve is the
# ~614.5 MiB the v1 "used" counted (615 idle, 22,233 loaded, while nvidia-smi showed 0 and
# 21,619), so v1 gives the exporter's old figures and v2 nvidia-smi's.
H200_UUID = "GPU-3bd33cc1-e0fb-fd38-78e8-4f434d0c3ba7"
H200_CAPTURES: dict[str, dict[str, Any]] = {
    "idle": {
        "memory_used_mib": 0.75,
        "utilization": (0, 0),
        "temperature": 37,
        "power_mw": 80_458,
        "clocks": (345, 3201),
        "energy_mj": 2_328_009,
        "processes": [],
    },
    "load": {
        "memory_used_mib": 21619.25,
        "utilization": (99, 24),
        "temperature": 61,
        "power_mw": 690_893,
        "clocks": (1470, 3201),
        "energy_mj": 7_783_069,
        "processes": [(489, 22_659_727_360)],
    },
    "after": {
        "memory_used_mib": 0.75,
        "utilization": (0, 0),
        "temperature": 39,
        "power_mw": 93_468,
        "clocks": (600, 3201),
        "energy_mj": 20_330_641,
        "processes": [],
    },
}


def h200_capture(moment: str, *, memory_v2: bool = True) -> FakeNvml:
    """The captured H200 (MIG supported but off, no NVLink, ECC on and clean) at ``moment``:
    ``idle``, ``load`` (bf16 matrix products holding 20 GiB) or ``after``."""
    gpu = FakeGpu(
        name="NVIDIA H200",
        uuid=H200_UUID,
        bus_id="00000000:00:06.0",
        memory_total_mib=143771,
        memory_reserved_mib=614.5,
        mig_mode=(0, 0),
        nvlinks=None,
        **H200_CAPTURES[moment],
    )
    return FakeNvml([gpu], driver_version="580.159.04", memory_v2=memory_v2)
