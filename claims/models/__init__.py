"""ResourceClaims and templates mirrored from the cluster (and, later, the portal's requests)."""

from claims.models.resource_claim_templates import ResourceClaimTemplate
from claims.models.resource_claims import AllocatedDevice, ClaimConsumer, ResourceClaim

__all__ = ["AllocatedDevice", "ClaimConsumer", "ResourceClaim", "ResourceClaimTemplate"]
