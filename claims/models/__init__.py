"""ResourceClaims and templates mirrored from the cluster, and the portal's claim requests."""

from claims.models.claim_requests import (
    REQUEST_ID_LABEL,
    RESERVATION_FINALIZER,
    ClaimRequest,
    ClaimRequestQuerySet,
)
from claims.models.class_policies import AllocationMode, ClassPolicy
from claims.models.resource_claim_templates import ResourceClaimTemplate
from claims.models.resource_claims import (
    SIMULATED_SCHEDULER_ANNOTATION,
    AllocatedDevice,
    ClaimConsumer,
    ResourceClaim,
)

__all__ = [
    "REQUEST_ID_LABEL",
    "RESERVATION_FINALIZER",
    "SIMULATED_SCHEDULER_ANNOTATION",
    "AllocatedDevice",
    "AllocationMode",
    "ClaimConsumer",
    "ClaimRequest",
    "ClaimRequestQuerySet",
    "ClassPolicy",
    "ResourceClaim",
    "ResourceClaimTemplate",
]
