"""``/metrics``: a ``prometheus_client`` Collector that renders one ``NodeState`` per scrape.

Metric and label names are dcgm-exporter's (``etc/default-counters.csv`` and its renderer), so
dashboards and alerts written for dcgm-exporter read this exporter unchanged:

- every GPU series carries ``gpu`` (NVML index), ``UUID``, ``pci_bus_id`` (as NVML writes it,
  ``00000000:1B:00.0``), ``device`` (``nvidia<index>``), ``modelName`` and ``Hostname``;
- a MIG device's series carry its parent's labels plus ``GPU_I_PROFILE`` (``1g.10gb``) and
  ``GPU_I_ID`` (the GPU instance id);
- units are dcgm-exporter's: MiB, %, °C, W, MHz, mJ.

dcgm-exporter's cumulative fields (ECC totals, energy) are counters there; here they are
exposed untyped because ``prometheus_client`` appends ``_total`` to a counter's name, which
would rename ``DCGM_FI_DEV_ECC_SBE_VOL_TOTAL``. What dcgm-exporter has no name for is under
``dra_exporter_``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from exporter.state import GpuState, MigDeviceState, NodeState, ProcessState

__all__ = ["FIELDS", "NodeCollector"]

# dcgm-exporter field name → (Prometheus type, help). Order is the order of /metrics.
FIELDS: dict[str, tuple[str, str]] = {
    "DCGM_FI_DEV_SM_CLOCK": ("gauge", "SM clock frequency (in MHz)."),
    "DCGM_FI_DEV_MEM_CLOCK": ("gauge", "Memory clock frequency (in MHz)."),
    "DCGM_FI_DEV_GPU_TEMP": ("gauge", "GPU temperature (in C)."),
    "DCGM_FI_DEV_POWER_USAGE": ("gauge", "Power draw (in W)."),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": (
        "unknown",
        "Total energy consumption since the driver loaded (in mJ); a counter.",
    ),
    "DCGM_FI_DEV_GPU_UTIL": ("gauge", "GPU utilization (in %)."),
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("gauge", "Memory utilization (in %)."),
    "DCGM_FI_DEV_FB_FREE": ("gauge", "Framebuffer memory free (in MiB)."),
    "DCGM_FI_DEV_FB_USED": ("gauge", "Framebuffer memory used (in MiB)."),
    "DCGM_FI_DEV_FB_TOTAL": ("gauge", "Framebuffer memory total (in MiB)."),
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": (
        "unknown",
        "Single-bit (corrected) volatile ECC errors; a counter.",
    ),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": (
        "unknown",
        "Double-bit (uncorrected) volatile ECC errors; a counter.",
    ),
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": (
        "unknown",
        "Single-bit (corrected) persistent ECC errors; a counter.",
    ),
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": (
        "unknown",
        "Double-bit (uncorrected) persistent ECC errors; a counter.",
    ),
}

Labels = dict[str, str]


def gpu_labels(gpu: GpuState, hostname: str) -> Labels:
    return {
        "gpu": str(gpu.index),
        "UUID": gpu.uuid,
        "pci_bus_id": gpu.pci_bus_id,
        "device": f"nvidia{gpu.index}",
        "modelName": gpu.name,
        "Hostname": hostname,
    }


def mig_labels(gpu: GpuState, mig: MigDeviceState, hostname: str) -> Labels:
    labels = gpu_labels(gpu, hostname)
    del labels["Hostname"]
    labels["GPU_I_PROFILE"] = mig.profile
    labels["GPU_I_ID"] = str(mig.gpu_instance_id)
    labels["Hostname"] = hostname
    return labels


class NodeCollector(Collector):
    """Reads the node (``read``, normally ``NvmlReader.read``) once per ``collect``."""

    def __init__(self, read: Callable[[], NodeState]) -> None:
        self._read = read

    def describe(self) -> list[Metric]:
        return []  # the series depend on the hardware: nothing to declare up front

    def collect(self) -> Iterator[Metric]:
        node = self._read()
        hostname = node.hostname
        healthy = [gpu for gpu in node.gpus if gpu.is_healthy]

        families = {name: Metric(name, help, kind) for name, (kind, help) in FIELDS.items()}
        for gpu in healthy:
            labels = gpu_labels(gpu, hostname)
            for name, value in gpu.values.items():
                families[name].add_sample(name, labels, value)
            for mig in gpu.mig_devices:
                labels = mig_labels(gpu, mig, hostname)
                for name, value in mig.values.items():
                    families[name].add_sample(name, labels, value)
        yield from (family for family in families.values() if family.samples)

        yield from self._xid(healthy, hostname)
        yield from self._mig_mode(healthy, hostname)
        yield from self._health(node)
        yield from self._nvlinks(healthy, hostname)
        yield from self._processes(healthy, hostname)

    def _xid(self, gpus: list[GpuState], hostname: str) -> Iterator[Metric]:
        name = "DCGM_FI_DEV_XID_ERRORS"
        family = Metric(name, "Value of the last XID error encountered.", "gauge")
        for gpu in gpus:
            if gpu.last_xid is not None:
                labels = gpu_labels(gpu, hostname) | {"err_code": str(gpu.last_xid)}
                family.add_sample(name, labels, gpu.last_xid)
        if family.samples:
            yield family

    def _mig_mode(self, gpus: list[GpuState], hostname: str) -> Iterator[Metric]:
        name = "DCGM_FI_DEV_MIG_MODE"
        family = Metric(name, "MIG mode: 1 enabled, 0 disabled.", "gauge")
        for gpu in gpus:
            if gpu.mig_mode is not None:
                family.add_sample(name, gpu_labels(gpu, hostname), gpu.mig_mode)
        if family.samples:
            yield family

    def _health(self, node: NodeState) -> Iterator[Metric]:
        name = "dra_exporter_nvml_up"
        up = Metric(name, "1 when NVML is initialised and answering.", "gauge")
        up.add_sample(name, {"Hostname": node.hostname}, 0 if node.nvml_error else 1)
        yield up
        if node.nvml_error:
            return
        name = "dra_exporter_gpu_up"
        gpu_up = Metric(name, "1 when every NVML call on the GPU succeeded this scrape.", "gauge")
        for gpu in node.gpus:
            gpu_up.add_sample(name, gpu_labels(gpu, node.hostname), 1 if gpu.is_healthy else 0)
        yield gpu_up
        name = "dra_exporter_gpu_error"
        errors = Metric(name, "The NVML error that failed the GPU this scrape.", "gauge")
        for gpu in node.gpus:
            if not gpu.is_healthy:
                labels = {
                    "gpu": str(gpu.index),
                    "UUID": gpu.uuid,
                    "Hostname": node.hostname,
                    "code": "" if gpu.error_code is None else str(gpu.error_code),
                    "error": gpu.error,
                }
                errors.add_sample(name, labels, 1)
        if errors.samples:
            yield errors

    def _nvlinks(self, gpus: list[GpuState], hostname: str) -> Iterator[Metric]:
        name = "dra_exporter_nvlink_up"
        family = Metric(name, "NVLink state: 1 active, 0 inactive.", "gauge")
        for gpu in gpus:
            for link in gpu.nvlinks:
                labels = gpu_labels(gpu, hostname) | {
                    "nvlink": str(link.link),
                    "remote_pci_bus_id": link.remote_pci_bus_id,
                    "remote_type": link.remote_type,
                }
                family.add_sample(name, labels, 1 if link.is_active else 0)
        if family.samples:
            yield family

    def _processes(self, gpus: list[GpuState], hostname: str) -> Iterator[Metric]:
        name = "dra_exporter_process_memory_used_bytes"
        family = Metric(
            name, "GPU memory used by a compute process (pod from its cgroup).", "gauge"
        )

        def add(labels: Labels, processes: tuple[ProcessState, ...]) -> None:
            for process in processes:
                if process.used_memory_bytes is None:
                    continue
                process_labels = labels | {
                    "pid": str(process.pid),
                    "pod_uid": process.pod_uid,
                    "container_id": process.container_id,
                }
                family.add_sample(name, process_labels, process.used_memory_bytes)

        for gpu in gpus:
            add(gpu_labels(gpu, hostname), gpu.processes)
            for mig in gpu.mig_devices:
                add(mig_labels(gpu, mig, hostname), mig.processes)
        if family.samples:
            yield family
