"""The Kubernetes objects the demo's simulated scheduler reads and writes: pods, claims and
their metadata, as plain JSON (no client here)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from claims.models import SIMULATED_SCHEDULER_ANNOTATION
from kube.errors import Conflict

__all__ = [
    "DELETE_PROTECTION",
    "GENERATED_BASE_LENGTH",
    "POD_CLAIM_NAME",
    "controller_uid",
    "devices_of",
    "generate_name",
    "is_allocated",
    "metadata_of",
    "needs_scheduling",
    "now_text",
    "protect",
    "reservation",
    "set_running",
    "status_of",
    "unprotect",
]

DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"


POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"


# The resourceclaim controller keeps generated names within 63 characters, 5 of them random.
GENERATED_BASE_LENGTH = 57


def metadata_of(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.setdefault("metadata", {})


def status_of(obj: dict[str, Any]) -> dict[str, Any]:
    status = obj.get("status")
    if not isinstance(status, dict):
        status = obj["status"] = {}
    return status


def now_text() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def controller_uid(claim: dict[str, Any]) -> str:
    """The uid of the pod controlling the claim (a claim generated from a template), or ""."""
    for owner in metadata_of(claim).get("ownerReferences") or []:
        if (
            owner.get("controller")
            and owner.get("kind") == "Pod"
            and owner.get("apiVersion") == "v1"
        ):
            return str(owner.get("uid") or "")
    return ""


def is_allocated(claim: dict[str, Any]) -> bool:
    return bool((claim.get("status") or {}).get("allocation"))


def needs_scheduling(pod: dict[str, Any]) -> bool:
    """Whether the pod waits for a node and uses claims (the only pods this scheduler places)."""
    spec, metadata = pod.get("spec") or {}, pod.get("metadata") or {}
    phase = (pod.get("status") or {}).get("phase")
    return bool(
        not spec.get("nodeName")
        and not metadata.get("deletionTimestamp")
        and not spec.get("schedulingGates")
        and phase not in ("Succeeded", "Failed")
        and spec.get("resourceClaims")
    )


def generate_name(pod_name: str, entry_name: str) -> str:
    """``<pod>-<entry>-``, both parts shortened in proportion when too long (as upstream)."""
    base = f"{pod_name}-{entry_name}"
    if len(base) > GENERATED_BASE_LENGTH:
        pod_part = pod_name[: len(pod_name) * GENERATED_BASE_LENGTH // len(base)]
        entry_part = entry_name[: len(entry_name) * GENERATED_BASE_LENGTH // len(base)]
        base = f"{pod_part}-{entry_part}"
    return f"{base}-"


def protect(claim: dict[str, Any]) -> bool:
    metadata = metadata_of(claim)
    finalizers = metadata.setdefault("finalizers", [])
    annotations = metadata.setdefault("annotations", {})
    if DELETE_PROTECTION in finalizers and annotations.get(SIMULATED_SCHEDULER_ANNOTATION):
        return False
    if DELETE_PROTECTION not in finalizers:
        finalizers.append(DELETE_PROTECTION)
    annotations[SIMULATED_SCHEDULER_ANNOTATION] = "true"
    return True


def unprotect(claim: dict[str, Any]) -> bool:
    if is_allocated(claim):
        return False  # allocated again meanwhile: the finalizer protects that allocation
    metadata = metadata_of(claim)
    finalizers = metadata.get("finalizers") or []
    annotations = metadata.get("annotations") or {}
    if DELETE_PROTECTION not in finalizers and SIMULATED_SCHEDULER_ANNOTATION not in annotations:
        return False
    kept = [finalizer for finalizer in finalizers if finalizer != DELETE_PROTECTION]
    if kept:
        metadata["finalizers"] = kept
    else:
        metadata.pop("finalizers", None)
    annotations.pop(SIMULATED_SCHEDULER_ANNOTATION, None)
    return True


def reservation(
    consumer: dict[str, str], allocation: dict[str, Any] | None
) -> Callable[[dict[str, Any]], bool]:
    """The status change that writes ``allocation`` (None: the claim is allocated already) and
    adds ``consumer`` to ``reservedFor``."""

    def reserve(claim: dict[str, Any]) -> bool:
        status = status_of(claim)
        changed = False
        written = status.get("allocation")
        if allocation is not None and devices_of(written) != devices_of(allocation):
            if written:
                name = metadata_of(claim).get("name")
                raise Conflict(f"resourceclaim {name!r} was allocated meanwhile")
            status["allocation"] = allocation
            changed = True
        reserved = status.setdefault("reservedFor", [])
        if not any(entry.get("uid") == consumer["uid"] for entry in reserved):
            reserved.append(dict(consumer))
            changed = True
        return changed

    return reserve


def devices_of(allocation: dict[str, Any] | None) -> dict[str, Any] | None:
    """An allocation without its time: what two writes of the same allocation share."""
    if allocation is None:
        return None
    return {key: value for key, value in allocation.items() if key != "allocationTimestamp"}


def set_running(pod: dict[str, Any]) -> bool:
    """What a kubelet would report once every container started: phase Running, the pod's
    conditions true and each container ready (``kubectl get pods`` then reads ``1/1``)."""
    status = status_of(pod)
    if status.get("phase") == "Running" and status.get("containerStatuses"):
        return False
    now = now_text()
    status["phase"] = "Running"
    status.setdefault("startTime", now)
    status["conditions"] = [
        {"type": kind, "status": "True", "lastTransitionTime": now}
        for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
    ] + [c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"]
    status["containerStatuses"] = [
        {
            "name": container.get("name", ""),
            "image": container.get("image", ""),
            "imageID": "",
            "ready": True,
            "started": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": now}},
        }
        for container in (pod.get("spec") or {}).get("containers") or []
    ]
    return True
