"""ResourceClaims and templates mirrored from the cluster, the portal's claim requests, the
history of allocations and the utilisation of what claims held."""

from claims.models.allocation_records import (
    AllocationRecord,
    AllocationRecordQuerySet,
    ClaimFacts,
    request_device_classes,
)
from claims.models.claim_idleness import ClaimIdleness, ClaimIdlenessQuerySet
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
from claims.models.usage_counters import (
    Counted,
    UsageCounter,
    UsageCounterQuerySet,
    UsageKey,
    difference,
    summed,
)
from claims.models.usage_rollups import UsageRollup, UsageRollupQuerySet

__all__ = [
    "REQUEST_ID_LABEL",
    "RESERVATION_FINALIZER",
    "SIMULATED_SCHEDULER_ANNOTATION",
    "AllocatedDevice",
    "AllocationMode",
    "AllocationRecord",
    "AllocationRecordQuerySet",
    "ClaimConsumer",
    "ClaimFacts",
    "ClaimIdleness",
    "ClaimIdlenessQuerySet",
    "ClaimRequest",
    "ClaimRequestQuerySet",
    "ClassPolicy",
    "Counted",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "UsageCounter",
    "UsageCounterQuerySet",
    "UsageKey",
    "UsageRollup",
    "UsageRollupQuerySet",
    "difference",
    "request_device_classes",
    "summed",
]
