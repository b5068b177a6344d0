"""Read-only claims API, scoped to the user's tenants like the pages."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import Http404
from rest_framework import viewsets

from claims.access import get_claim_for_user
from claims.filtersets import ResourceClaimFilterSet
from claims.models import ResourceClaim

from .serializers import ResourceClaimSerializer

__all__ = ["ResourceClaimViewSet"]


class ResourceClaimViewSet(viewsets.ReadOnlyModelViewSet):
    """ResourceClaims in your tenants' namespaces (all of them for portal admins). One claim
    is addressed as ``<namespace>/<name>``."""

    serializer_class = ResourceClaimSerializer
    filterset_class = ResourceClaimFilterSet
    lookup_url_kwarg = "key"
    lookup_value_regex = r"[^/]{1,63}/[^/]{1,253}"  # a namespace is a DNS label
    ordering_fields = ["namespace", "name", "created_at"]

    def get_queryset(self) -> QuerySet[ResourceClaim]:
        return ResourceClaim.objects.visible_to(self.request.user).prefetch_related(
            "allocated_devices", "consumers"
        )

    def get_object(self) -> ResourceClaim:
        namespace, _, name = self.kwargs["key"].partition("/")
        if not name:
            raise Http404("Address a claim as <namespace>/<name>.")
        return get_claim_for_user(self.request.user, namespace, name)
