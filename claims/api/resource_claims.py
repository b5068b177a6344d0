"""Mirrored ResourceClaims over the API: read-only, scoped like the pages (your tenants'
namespaces; every one for portal admins), with a claim's utilisation and why it is pending."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from claims.access import get_claim_for_user
from claims.api.serializers import ResourceClaimSerializer, WhyPendingSerializer
from claims.filtersets import ResourceClaimFilterSet
from claims.models import ResourceClaim
from claims.requests.preview import why_pending
from claims.usage.utilisation import claim_utilisation
from toolkit.api.utilisation import (
    RANGE_PARAMETER,
    UTILISATION_RESPONSE,
    requested_range,
    utilisation_response,
)

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

    @extend_schema(
        summary="A claim's GPU utilisation over a time range",
        description=(
            "The utilisation of the devices the claim held, per 5-minute (up to 24h) or hourly "
            "bucket, weighted by device-time: counted once however many pods share the claim, "
            "devices it only observes (admin access) not counted. ``lifetime_average`` and "
            "``device_hours`` cover its whole life."
        ),
        parameters=[RANGE_PARAMETER],
        responses=UTILISATION_RESPONSE,
    )
    @action(detail=True, methods=["get"], url_path="utilisation", pagination_class=None)
    def utilisation(self, request: Request, key: str) -> Response:
        claim = self.get_object()
        span = requested_range(request)
        found = claim_utilisation(claim, span=span)
        return utilisation_response(
            span,
            {"gpu_util": found.history if found else []},
            simulated=bool(found and found.is_simulated),
            lifetime_average=found.average if found else None,
            device_hours=found.device_hours if found else 0,
        )

    @extend_schema(
        summary="Why a claim is pending",
        description=(
            "For a claim that is not allocated: whether the allocator would place it now (node), "
            "and if not, the funnel of devices left after each stage per (sub)request and hints "
            "about its selectors. Advice from the portal's index: the scheduler decides. "
            "`pending` is false (and the rest empty) for an allocated or deleting claim."
        ),
        responses=WhyPendingSerializer,
    )
    @action(detail=True, methods=["get"], url_path="why", pagination_class=None)
    def why(self, request: Request, key: str) -> Response:
        claim = self.get_object()
        found = why_pending(claim)
        answer = {"pending": found is not None, **(found or {})}
        answer.setdefault("funnels", [])
        return Response(WhyPendingSerializer(answer).data)
