"""Tenancy API: the current user, tenants, quotas and the audit trail.

Thin viewsets (STYLE §5): querysets come from ``visible_to(user)``, writes go through
``portal.services.tenants``.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import exceptions, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAdminUser, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

from portal.access import get_tenant_for_user
from portal.api.serializers import (
    AuditEventSerializer,
    ConfigurationInputSerializer,
    ConfigurationOutcomeSerializer,
    CurrentUserSerializer,
    MemberAddSerializer,
    MemberRoleSerializer,
    MemberSerializer,
    QuotaSerializer,
    TenantSerializer,
)
from portal.filtersets import AuditEventFilterSet, QuotaFilterSet, TenantFilterSet
from portal.models import AuditEvent, Membership, Quota, Tenant
from portal.services import configuration
from portal.services import tenants as tenant_services
from toolkit.api.errors import Conflict
from toolkit.api.permissions import ReadForMembersWriteForStaff

__all__ = [
    "AuditEventViewSet",
    "ConfigurationView",
    "CurrentUserView",
    "QuotaViewSet",
    "TenantViewSet",
]


class CurrentUserView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses=CurrentUserSerializer, summary="The signed-in user and their tenants")
    def get(self, request: Request) -> Response:
        return Response(CurrentUserSerializer(request.user).data)


@extend_schema_view(
    destroy=extend_schema(
        summary="Delete a tenant (portal admins)",
        description="Deletes the tenant with its namespaces, members and quotas. A tenant "
        "that has claim requests, in any state (they are its history), is kept: 409 "
        "`conflict`, the message says what still belongs to it.",
        responses={
            204: None,
            409: OpenApiResponse(
                description="Claim requests still belong to the tenant (`conflict`)."
            ),
        },
    )
)
class TenantViewSet(viewsets.ModelViewSet):
    """Tenants you belong to (all of them for portal admins). Writes: portal admins.

    ``members/``: everyone in the tenant reads; tenant admins and portal admins add, change
    roles and remove (through ``portal.services.tenants``, audited)."""

    serializer_class = TenantSerializer
    permission_classes = [ReadForMembersWriteForStaff]
    filterset_class = TenantFilterSet
    lookup_field = "slug"
    ordering_fields = ["name", "created_at"]

    def get_queryset(self) -> QuerySet[Tenant]:
        return Tenant.objects.visible_to(self.request.user).prefetch_related("namespaces")

    def perform_create(self, serializer: BaseSerializer[Tenant]) -> None:
        data: dict[str, Any] = dict(serializer.validated_data)
        namespaces = data.pop("namespaces", [])
        serializer.instance = tenant_services.save_tenant(
            actor=self.request.user, tenant=None, namespaces=namespaces, **data
        )

    def perform_update(self, serializer: BaseSerializer[Tenant]) -> None:
        data: dict[str, Any] = dict(serializer.validated_data)
        namespaces = data.pop("namespaces", None)
        serializer.instance = tenant_services.save_tenant(
            actor=self.request.user, tenant=serializer.instance, namespaces=namespaces, **data
        )

    def perform_destroy(self, instance: Tenant) -> None:
        try:
            tenant_services.delete_tenant(actor=self.request.user, tenant=instance)
        except tenant_services.TenantInUseError as refused:
            raise Conflict(" ".join(refused.messages)) from refused

    def _member_tenant(self, request: Request, slug: str | None) -> Tenant:
        """Another tenant is 404; changing members needs a tenant admin or portal admin (403)."""
        write = request.method not in ("GET", "HEAD", "OPTIONS")
        return get_tenant_for_user(request.user, slug or "", write=write)

    @extend_schema(
        methods=["GET"],
        summary="The tenant's members",
        responses=MemberSerializer(many=True),
        filters=False,
    )
    @extend_schema(
        methods=["POST"],
        summary="Add a member by username (tenant admins, portal admins)",
        request=MemberAddSerializer,
        responses={201: MemberSerializer},
    )
    @action(
        detail=True,
        methods=["get", "post"],
        url_path="members",
        permission_classes=[IsAuthenticated],
        filterset_class=None,
        pagination_class=None,
    )
    def members(self, request: Request, slug: str | None = None) -> Response:
        tenant = self._member_tenant(request, slug)
        if request.method == "GET":
            memberships = tenant.memberships.select_related("user").order_by("user__username")
            return Response(MemberSerializer(memberships, many=True).data)
        body = MemberAddSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        membership = tenant_services.add_member(
            actor=request.user,
            tenant=tenant,
            username=body.validated_data["username"],
            role=Membership.Role(body.validated_data["role"]),
        )
        return Response(MemberSerializer(membership).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        methods=["GET"],
        summary="One member of the tenant",
        responses=MemberSerializer,
        parameters=[OpenApiParameter("username", str, OpenApiParameter.PATH)],
        filters=False,
    )
    @extend_schema(
        methods=["PATCH", "PUT"],
        summary="Change a member's role (tenant admins, portal admins)",
        description="The tenant's last tenant admin cannot be demoted (400, on `role`).",
        request=MemberRoleSerializer,
        responses=MemberSerializer,
        parameters=[OpenApiParameter("username", str, OpenApiParameter.PATH)],
    )
    @extend_schema(
        methods=["DELETE"],
        summary="Remove a member (tenant admins, portal admins)",
        description="The tenant's last tenant admin cannot be removed (400).",
        responses={204: None},
        parameters=[OpenApiParameter("username", str, OpenApiParameter.PATH)],
    )
    @action(
        detail=True,
        methods=["get", "put", "patch", "delete"],
        url_path=r"members/(?P<username>[^/]+)",
        url_name="member",
        permission_classes=[IsAuthenticated],
        filterset_class=None,
        pagination_class=None,
    )
    def member(self, request: Request, slug: str | None = None, username: str = "") -> Response:
        tenant = self._member_tenant(request, slug)
        membership = (
            tenant.memberships.select_related("user").filter(user__username=username).first()
        )
        if membership is None:
            raise Http404("No such member.")
        if request.method == "GET":
            return Response(MemberSerializer(membership).data)
        if request.method == "DELETE":
            tenant_services.remove_member(actor=request.user, membership=membership)
            return Response(status=status.HTTP_204_NO_CONTENT)
        body = MemberRoleSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        saved = tenant_services.set_member(
            actor=request.user,
            tenant=tenant,
            user=membership.user,
            role=Membership.Role(body.validated_data["role"]),
        )
        return Response(MemberSerializer(saved).data)


class QuotaViewSet(viewsets.ModelViewSet):
    """Quotas of the tenants you can see. Writes: portal admins."""

    serializer_class = QuotaSerializer
    permission_classes = [ReadForMembersWriteForStaff]
    filterset_class = QuotaFilterSet
    ordering_fields = ["device_class_name", "updated_at"]

    def get_queryset(self) -> QuerySet[Quota]:
        return (
            Quota.objects.visible_to(self.request.user)
            .with_cluster_presence()
            .select_related("tenant")
        )

    def _save(self, serializer: BaseSerializer[Quota]) -> None:
        data: dict[str, Any] = dict(serializer.validated_data)
        previous = serializer.instance
        if previous is not None:
            data.setdefault("tenant", previous.tenant)
            data.setdefault("device_class_name", previous.device_class_name)
        # A PATCH keeps what it does not name: save_quota resets what it is not given.
        limits: dict[str, Any] = {
            key: data.get(key, getattr(previous, key, None))
            for key in tenant_services.QUOTA_FIELDS
            if key != "device_class_name"
        }
        if limits["approve_over_quota"] is None:
            limits["approve_over_quota"] = False
        serializer.instance = tenant_services.save_quota(
            actor=self.request.user,
            tenant=data["tenant"],
            device_class_name=data["device_class_name"],
            previous=previous,
            **limits,
        )

    perform_create = _save
    perform_update = _save

    def perform_destroy(self, instance: Quota) -> None:
        tenant_services.delete_quota(actor=self.request.user, quota=instance)


MOMENT = "A date (YYYY-MM-DD) or an ISO 8601 time; a time without an offset is in the portal's"
AUDIT_FILTERS = [
    OpenApiParameter("actor", str, description="The actor's username (any case)."),
    OpenApiParameter(
        "tenant", str, description="A tenant's slug; one whose events you may not see is a 400."
    ),
    OpenApiParameter("object", str, description="The object's id, or part of its name."),
    OpenApiParameter("since", str, description=f"From this moment. {MOMENT} time zone."),
    OpenApiParameter(
        "until",
        str,
        description=f"To this moment; a date takes in its whole day. {MOMENT} time zone.",
    ),
]


@extend_schema_view(list=extend_schema(parameters=AUDIT_FILTERS))
class AuditEventViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The audit trail: everything for portal admins, your tenants' events for tenant admins.
    Its filters are the audit log page's (``AuditEventFilterSet``)."""

    serializer_class = AuditEventSerializer
    filterset_class = AuditEventFilterSet

    def get_queryset(self) -> QuerySet[AuditEvent]:
        return AuditEvent.objects.visible_to(self.request.user).select_related("tenant")


class ConfigurationView(APIView):
    """Configuration as code (``portal.services.configuration``): the tenancy as one document,
    read or applied whole. Portal admins only."""

    permission_classes = [IsAdminUser]

    @extend_schema(
        summary="The portal's tenancy as a configuration document",
        description="Tenants with their namespaces, members (those the identity provider does "
        "not manage) and quotas: a start for the file kept in git.",
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        return Response(configuration.current_configuration())

    @extend_schema(
        summary="Plan or apply a configuration document",
        description="Applies the whole document in one transaction, audited (one "
        "`configuration_applied` event plus each object's own), or with `dry_run` answers what "
        "would change. Applying the same document again changes nothing. Removals only with "
        "`prune`. A document with any problem is refused whole: 400 `invalid_configuration` "
        "with every problem in `details.problems` (path and message).",
        request=ConfigurationInputSerializer,
        responses={
            200: ConfigurationOutcomeSerializer,
            400: OpenApiResponse(description="Refused."),
        },
    )
    def post(self, request: Request) -> Response:
        body = ConfigurationInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            outcome = configuration.apply_configuration(
                actor=request.user,
                document=body.validated_data["document"],
                prune=body.validated_data["prune"],
                dry_run=body.validated_data["dry_run"],
            )
        except configuration.ConfigurationRefused as refused:
            raise InvalidConfiguration(refused.problems) from refused
        return Response(
            ConfigurationOutcomeSerializer(
                {"applied": outcome.applied, "changes": [c.as_dict() for c in outcome.changes]}
            ).data
        )


class InvalidConfiguration(exceptions.APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "invalid_configuration"

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        count = len(problems)
        first = f"{problems[0][0]}: {problems[0][1]}" if problems[0][0] else problems[0][1]
        super().__init__(
            f"The configuration was refused whole ({count} problem{'s' if count > 1 else ''}; "
            f"nothing changed). First: {first}"
        )
        self.details = {"problems": [{"path": path, "message": m} for path, m in problems]}
