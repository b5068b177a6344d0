"""The object applying a request creates in the cluster, built once: the apply writes it and
the New-claim page and the API preview show it (``manifest_document``)."""

from __future__ import annotations

from typing import Any

from claims.models import REQUEST_ID_LABEL, RESERVATION_FINALIZER, AllocationMode, ClaimRequest
from kube.kinds import Kind

__all__ = ["manifest"]


def manifest(request: ClaimRequest) -> tuple[Kind, dict[str, Any]]:
    """The object applying ``request`` creates: a ResourceClaim, or a ResourceClaimTemplate."""
    metadata: dict[str, Any] = {
        "name": request.name,
        "namespace": request.namespace,
        "labels": {REQUEST_ID_LABEL: str(request.pk), "app.kubernetes.io/managed-by": "dra-portal"},
        "annotations": {
            "dra-portal.io/requested-by": (
                request.requested_by.get_username() if request.requested_by else ""
            ),
            "dra-portal.io/mode": request.mode,
        },
    }
    if request.expires_at:
        metadata["annotations"]["dra-portal.io/expires-at"] = request.expires_at.isoformat()
    if request.is_template:
        return Kind.RESOURCE_CLAIM_TEMPLATES, {"metadata": metadata, "spec": {"spec": request.spec}}
    if request.mode == AllocationMode.RESERVATION:
        metadata["finalizers"] = [RESERVATION_FINALIZER]
    return Kind.RESOURCE_CLAIMS, {"metadata": metadata, "spec": request.spec}
