"""The single-object gate for claims (STYLE §3): nothing else fetches a claim by name."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404

from claims.models import ClaimRequest, ResourceClaim
from portal.models import Tenant

__all__ = ["get_claim_for_user", "get_request_for_user"]


def get_claim_for_user(user: User | AnonymousUser, namespace: str, name: str) -> ResourceClaim:
    """The claim ``namespace/name`` if ``user`` may see it; ``Http404`` otherwise, so that a
    claim in another tenant's namespace is indistinguishable from one that does not exist."""
    claim = ResourceClaim.objects.visible_to(user).filter(namespace=namespace, name=name).first()
    if claim is None:
        raise Http404("No such claim.")
    return claim


def get_request_for_user(
    user: User | AnonymousUser, pk: Any, *, write: bool = False
) -> ClaimRequest:
    """The claim request ``pk`` if ``user`` may see it (``write``: may release or renew it:
    its requester, its tenant's admins, portal admins); ``Http404`` otherwise, so another
    tenant's request is indistinguishable from one that does not exist. A teammate who may
    see but not change it gets ``PermissionDenied``."""
    try:
        request = (
            ClaimRequest.objects.visible_to(user).select_related("tenant").distinct().get(pk=pk)
        )
    except (ClaimRequest.DoesNotExist, ValueError, ValidationError):
        raise Http404("No such claim request.") from None
    if write and not (
        user.is_staff
        or request.requested_by_id == user.pk
        or Tenant.objects.administered_by(user).filter(pk=request.tenant_id).exists()
    ):
        raise PermissionDenied("Only the requester and the tenant's admins may change it.")
    return request
