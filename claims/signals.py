"""Keeps ``ResourceClaim.tenant`` in step with the tenancy domain's namespace ownership."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import OuterRef, Subquery
from django.dispatch import receiver

from claims.models import ResourceClaim
from portal.models import TenantNamespace
from portal.signals import namespaces_changed

__all__ = ["relink_claim_tenants"]


@receiver(namespaces_changed, dispatch_uid="claims.relink_claim_tenants")
def relink_claim_tenants(sender: Any, names: Iterable[str], **kwargs: Any) -> int:
    """Points the claims in ``names`` at the tenant now owning their namespace (or none)."""
    owner = TenantNamespace.objects.filter(name=OuterRef("namespace")).values("tenant_id")[:1]
    return ResourceClaim.objects.filter(namespace__in=list(names)).update(tenant=Subquery(owner))
