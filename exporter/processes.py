"""Which pod and container a GPU process belongs to, read from ``/proc/<pid>/cgroup``.

NVML reports host PIDs (the driver does not know PID namespaces), so this only works when the
exporter shares the host's PID namespace (``hostPID: true`` in the DaemonSet) or is pointed at
the host's ``/proc`` (``--proc-root``). The pod UID is what links a process, and so a GPU's
use, to the pod and through it to its ResourceClaims.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["ContainerRef", "container_of"]

# The kubelet's cgroup names: "pod<uid>" (cgroupfs) or "kubepods-…-pod<uid with _>.slice"
# (systemd); container runtimes end the path with the 64-hex container id.
_POD_UID = re.compile(
    r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})"
)
_CONTAINER_ID = re.compile(r"([0-9a-f]{64})")

ContainerRef = tuple[str, str]


def container_of(pid: int, proc_root: Path) -> ContainerRef:
    """Return ``(pod_uid, container_id)`` for a host PID; empty strings when unknown
    (the process is gone, not in a pod, or ``/proc`` is not the host's)."""
    try:
        text = (proc_root / str(pid) / "cgroup").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "", ""
    pod_uid = container_id = ""
    for line in text.splitlines():
        path = line.rsplit(":", 1)[-1]
        if not pod_uid and (match := _POD_UID.search(path)):
            pod_uid = match.group(1).replace("_", "-")
        if not container_id and (ids := _CONTAINER_ID.findall(path)):
            container_id = ids[-1]
    return pod_uid, container_id
