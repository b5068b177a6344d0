"""``/devices``: the node's GPUs as JSON, facts and topology, keyed the way DRA keys them.

Each GPU carries its ``uuid`` (the NVIDIA DRA driver's ``uuid`` attribute), its PCI address in
the form of the ``resource.kubernetes.io/pciBusID`` attribute (``0000:1b:00.0``) and as NVML
writes it, its MIG devices with their GPU instance placement, its NVLinks and their peers;
``topology`` lists every pair of GPUs with their common PCIe ancestor (``nvidia-smi topo -m``
names: PIX, PXB, PHB, NODE, SYS) and the NVLinks joining them. ``draDeviceName`` is the device
name the NVIDIA DRA driver gives the GPU (``gpu-0``) or MIG device
(``gpu-0-mig-1g10gb-15-0``: profile, profile id, placement start), so the portal can match a
device to its ResourceSlice entry. Field names are camelCase, as in Kubernetes objects.
"""

from __future__ import annotations

from typing import Any

from exporter.state import GpuState, MigDeviceState, NodeState, ProcessState, dra_bus_id

__all__ = ["dra_device_name", "inventory"]


def dra_device_name(gpu: GpuState, mig: MigDeviceState | None = None) -> str:
    if mig is None:
        return f"gpu-{gpu.index}"
    profile = mig.profile.replace(".", "").replace("+", "-")
    return f"gpu-{gpu.index}-mig-{profile}-{mig.profile_id}-{mig.placement_start}"


def inventory(node: NodeState) -> dict[str, Any]:
    return {
        "hostname": node.hostname,
        "nvml": {"initialised": not node.nvml_error, "error": node.nvml_error},
        "driverVersion": node.driver_version,
        "gpus": [_gpu(gpu, node) for gpu in node.gpus],
        "topology": [
            {
                "gpu": pair.gpu,
                "peer": pair.peer,
                "level": pair.level_name,
                "levelValue": pair.level,
                "nvlinks": pair.nvlinks,
            }
            for pair in node.topology
        ],
    }


def _gpu(gpu: GpuState, node: NodeState) -> dict[str, Any]:
    if not gpu.is_healthy:
        return {
            "index": gpu.index,
            "uuid": gpu.uuid,
            "pciBusID": dra_bus_id(gpu.pci_bus_id) if gpu.pci_bus_id else "",
            "error": {"code": gpu.error_code, "message": gpu.error},
        }
    return {
        "index": gpu.index,
        "draDeviceName": dra_device_name(gpu),
        "uuid": gpu.uuid,
        "name": gpu.name,
        "pciBusID": dra_bus_id(gpu.pci_bus_id),
        "nvmlPciBusId": gpu.pci_bus_id,
        "minorNumber": gpu.minor_number,
        "mig": {
            "supported": gpu.mig_mode is not None,
            "enabled": gpu.mig_mode == 1,
            "pendingEnabled": gpu.mig_mode_pending == 1,
            "devices": [_mig(gpu, mig) for mig in gpu.mig_devices],
        },
        "nvlinks": [
            {
                "link": link.link,
                "active": link.is_active,
                "remotePciBusID": dra_bus_id(link.remote_pci_bus_id)
                if link.remote_pci_bus_id
                else "",
                "remoteType": link.remote_type,
                "remoteGpu": _gpu_at(node, link.remote_pci_bus_id),
            }
            for link in gpu.nvlinks
        ],
        "processes": [_process(process) for process in gpu.processes],
    }


def _mig(gpu: GpuState, mig: MigDeviceState) -> dict[str, Any]:
    return {
        "index": mig.index,
        "draDeviceName": dra_device_name(gpu, mig),
        "uuid": mig.uuid,
        "parentUUID": gpu.uuid,
        "profile": mig.profile,
        "profileId": mig.profile_id,
        "gpuInstanceId": mig.gpu_instance_id,
        "computeInstanceId": mig.compute_instance_id,
        "placement": {"start": mig.placement_start, "size": mig.placement_size},
        "memoryTotalMiB": mig.values.get("DCGM_FI_DEV_FB_TOTAL"),
        "processes": [_process(process) for process in mig.processes],
    }


def _process(process: ProcessState) -> dict[str, Any]:
    return {
        "pid": process.pid,
        "usedMemoryBytes": process.used_memory_bytes,
        "podUID": process.pod_uid,
        "containerID": process.container_id,
    }


def _gpu_at(node: NodeState, pci_bus_id: str) -> int | None:
    if not pci_bus_id:
        return None
    wanted = dra_bus_id(pci_bus_id)
    for gpu in node.gpus:
        if gpu.pci_bus_id and dra_bus_id(gpu.pci_bus_id) == wanted:
            return gpu.index
    return None
