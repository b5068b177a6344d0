"""The object applying a request creates in the cluster, built once: the apply writes it and
the New-claim page and the API preview show it (``manifest_document``)."""

from __future__ import annotations

from typing import Any

from claims.models import REQUEST_ID_LABEL, RESERVATION_FINALIZER, AllocationMode, ClaimRequest
from kube.kinds import KINDS, Kind

__all__ = ["PREVIEW_REQUEST_ID", "manifest", "manifest_document"]

# The request-id label's value in a preview: the id is assigned when the request is recorded.
PREVIEW_REQUEST_ID = "assigned-on-submit"


def manifest(request: ClaimRequest, *, preview: bool = False) -> tuple[Kind, dict[str, Any]]:
    """The object applying ``request`` creates: a ResourceClaim, or a ResourceClaimTemplate.
    ``preview``: for a request not recorded yet (the New-claim page), its id a placeholder."""
    request_id = PREVIEW_REQUEST_ID if preview else str(request.pk)
    metadata: dict[str, Any] = {
        "name": request.name,
        "namespace": request.namespace,
        "labels": {REQUEST_ID_LABEL: request_id, "app.kubernetes.io/managed-by": "dra-portal"},
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


def manifest_document(request: ClaimRequest, *, preview: bool = False) -> dict[str, Any]:
    """:func:`manifest` as a whole Kubernetes document (``apiVersion`` and ``kind`` first), as
    the pages show it."""
    kind, body = manifest(request, preview=preview)
    return {"apiVersion": KINDS[kind].api_version, "kind": KINDS[kind].kind, **body}
