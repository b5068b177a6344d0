"""Claims API: the mirrored claims (read-only) and the portal's claim requests.

Thin viewsets (STYLE §5): parse (input serializers) → gate (``visible_to``,
``get_request_for_user``, ``get_tenant_for_user``) → service (``claims.requests.services``,
``claims.requests.fit``) → respond (output serializers). The services' refusals map to statuses
here:
:class:`~claims.requests.specs.SpecErrors` → 400 with ``fields``; over quota → 409
``quota_exceeded`` with the usage, limit and room in ``details``; a state that forbids the change →
409 ``conflict``; an idempotency key reused for another body → 422 ``idempotency_key_reused``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, cast

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import exceptions, mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claims.access import get_request_for_user
from claims.api.inputs import (
    ClaimInputSerializer,
    DecisionInputSerializer,
    ReleaseInputSerializer,
    RenewInputSerializer,
)
from claims.api.serializers import (
    ClaimRequestSerializer,
    FitReportSerializer,
    QuotaCheckSerializer,
    TenantUsageSerializer,
)
from claims.filtersets import ClaimRequestFilterSet
from claims.models import ClaimRequest, ResourceClaim, UsageRollup
from claims.requests.approvals import approve_request, deny_request, may_decide
from claims.requests.fit import would_it_fit
from claims.requests.quota import quota_report
from claims.requests.services import QuotaExceeded, release_request, renew_request, submit
from claims.requests.specs import SpecErrors
from claims.usage.utilisation import scope_utilisation
from portal.access import get_tenant_for_user
from toolkit.api.errors import Conflict
from toolkit.api.parsers import BoundedJSONParser
from toolkit.api.utilisation import (
    RANGE_PARAMETER,
    UTILISATION_RESPONSE,
    requested_range,
    utilisation_response,
)

__all__ = [
    "ClaimRequestViewSet",
    "TenantUsageView",
    "TenantUtilisationView",
]

IDEMPOTENCY_KEY_MAX = 200  # ClaimRequest.idempotency_key


# --- claim requests ------------------------------------------------------------------------------


class QuotaExceededError(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "quota_exceeded"

    def __init__(self, error: QuotaExceeded) -> None:
        super().__init__(" ".join(error.check.problems) or "Over quota.")
        self.details = {"quota": QuotaCheckSerializer(error.check).data}


class IdempotencyKeyReused(exceptions.APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_code = "idempotency_key_reused"


def refusal(error: SpecErrors) -> exceptions.APIException:
    """The API's answer to a service's refusal (see the module docstring)."""
    if isinstance(error, QuotaExceeded):
        return QuotaExceededError(error)
    if "idempotency_key" in error.errors:
        return IdempotencyKeyReused(
            "This Idempotency-Key was used for a different request; retry with the same "
            "body, or use a new key for a new request."
        )
    if set(error.errors) == {"state"}:
        return Conflict(" ".join(error.errors["state"]))
    return exceptions.ValidationError(error.errors)


def idempotency_key(request: Request) -> str:
    """The ``Idempotency-Key`` header ("" when absent): printable, at most 200 characters."""
    key = request.headers.get("Idempotency-Key", "")
    if len(key) > IDEMPOTENCY_KEY_MAX or not key.isprintable():
        raise exceptions.ValidationError(
            {"Idempotency-Key": [f"At most {IDEMPOTENCY_KEY_MAX} printable characters."]}
        )
    return key


def mirrored_claims(requests: Iterable[ClaimRequest]) -> dict[Any, ResourceClaim]:
    """By request id: the mirrored ResourceClaim each request made (the one carrying its id
    label; a later claim of the same name is another request's). One query for a page."""
    by_name: dict[tuple[str, str], list[ClaimRequest]] = defaultdict(list)
    for claim_request in requests:
        by_name[(claim_request.namespace, claim_request.name)].append(claim_request)
    if not by_name:
        return {}
    found = ResourceClaim.objects.filter(
        namespace__in={namespace for namespace, _ in by_name},
        name__in={name for _, name in by_name},
    ).prefetch_related("allocated_devices", "consumers")
    claims = {}
    for claim in found:
        for claim_request in by_name.get((claim.namespace, claim.name), []):
            if claim_request.made(claim.labels):
                claims[claim_request.pk] = claim
    return claims


CREATE_EXAMPLE = OpenApiExample(
    "Two H100 on one NVLink clique for a week",
    value={
        "namespace": "team-a-dev",
        "name": "train-h100",
        "device_class": "gpu.nvidia.com",
        "count": 2,
        "selectors": ['device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100")'],
        "constraint": "nvlink",
        "lease": "P7D",
    },
    request_only=True,
)
REQUEST_EXAMPLE = OpenApiExample(
    "An accepted request",
    value={
        "id": "0b7e4c1e-2f43-4d7c-9a55-54a1bb3c2f10",
        "url": "https://portal.example.com/api/v1/claim-requests/0b7e4c1e-2f43-4d7c-9a55-54a1bb3c2f10/",
        "tenant": "team-a",
        "namespace": "team-a-dev",
        "name": "train-h100",
        "device_class": "gpu.nvidia.com",
        "mode": "reservation",
        "sharing": "claim",
        "state": "applied",
        "reason": "",
        "admin_access": False,
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "devices",
                        "exactly": {
                            "deviceClassName": "gpu.nvidia.com",
                            "allocationMode": "ExactCount",
                            "count": 2,
                        },
                    }
                ]
            }
        },
        "form": {"namespace": "team-a-dev", "name": "train-h100", "count": 2},
        "held_devices": 2,
        "held_memory_bytes": 171798691840,
        "lease": "P7D",
        "expires_at": "2026-12-01T10:00:00Z",
        "allocation": None,
        "node": "dgx-h100-01",
        "devices": [],
        "consumers": [],
        "requested_by": "bob",
        "created_at": "2026-11-24T10:00:00Z",
        "applied_at": "2026-11-24T10:00:01Z",
        "ended_at": None,
        "updated_at": "2026-11-24T10:00:01Z",
    },
    response_only=True,
)


def _error(status_code: int, code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"status": status_code, "code": code, "message": message, **extra}}


BAD_INPUT = OpenApiResponse(
    OpenApiTypes.OBJECT,
    description="The body is invalid: `fields` names each problem (unknown fields included).",
    examples=[
        OpenApiExample(
            "Invalid fields",
            value=_error(
                400,
                "invalid",
                "count: Ask for 1 to 32 devices, or All (got 40).",
                fields={
                    "count": ["Ask for 1 to 32 devices, or All (got 40)."],
                    "colour": ["Unknown field; the fields are: namespace, name, ..."],
                },
            ),
        )
    ],
)
OVER_QUOTA = OpenApiResponse(
    OpenApiTypes.OBJECT,
    description="Over quota (`quota_exceeded`): `details.quota` holds the usage, the limit "
    "and what would still fit. Nothing was recorded.",
    examples=[
        OpenApiExample(
            "Over quota",
            value=_error(
                409,
                "quota_exceeded",
                "Devices: 7 of 8 in use or requested; 2 more would exceed the quota "
                "(1 would still fit).",
                details={
                    "quota": {
                        "fits": False,
                        "problems": ["Devices: 7 of 8 in use or requested; ..."],
                        "asked": {"devices": 2, "memory_bytes": 0, "claims": 1},
                        "used": {"devices": 6, "memory_bytes": 0, "claims": 3},
                        "in_flight": {"devices": 1, "memory_bytes": 0, "claims": 1},
                        "limit": {
                            "max_devices": 8,
                            "max_device_memory": None,
                            "max_claims": None,
                            "max_lease": "P7D",
                        },
                        "room": {"devices": 1, "memory_bytes": None, "claims": None},
                    }
                },
            ),
        )
    ],
)
KEY_REUSED = OpenApiResponse(
    OpenApiTypes.OBJECT,
    description="The Idempotency-Key was used before with a different body "
    "(`idempotency_key_reused`).",
)
STATE_CONFLICT = OpenApiResponse(
    OpenApiTypes.OBJECT,
    description="The request's state forbids it (`conflict`): e.g. pods still use the claim, "
    "or the request has ended.",
)
IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Retrying with the same key and body returns the first request (200) instead "
    "of creating another; the same key with another body is a 422. Keys are per user.",
    pattern=r"^[ -~]{1,200}$",
)


@extend_schema_view(
    list=extend_schema(summary="Claim requests of your tenants"),
    retrieve=extend_schema(summary="One claim request", responses={200: ClaimRequestSerializer}),
)
class ClaimRequestViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Self-service claim requests of your tenants (all of them for portal admins). Writes go
    through ``claims.requests.services``: the same checks, quota lock and audit trail as the
    pages."""

    serializer_class = ClaimRequestSerializer
    filterset_class = ClaimRequestFilterSet
    parser_classes = [BoundedJSONParser]
    lookup_value_regex = r"[0-9a-fA-F-]{32,36}"
    ordering_fields = ["created_at", "expires_at", "namespace", "name", "state"]

    def get_queryset(self) -> QuerySet[ClaimRequest]:
        return ClaimRequest.objects.visible_to(self.request.user).select_related(
            "tenant", "requested_by"
        )

    def get_object(self) -> ClaimRequest:
        return get_request_for_user(self.request.user, self.kwargs["pk"])

    def render(self, requests: list[ClaimRequest]) -> list[Any]:
        context = {**self.get_serializer_context(), "claims": mirrored_claims(requests)}
        # many=True: a ListSerializer, whose data is a list.
        return cast("list[Any]", ClaimRequestSerializer(requests, many=True, context=context).data)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert page is not None  # every list is paginated
        return self.get_paginated_response(self.render(page))

    def retrieve(self, request: Request, pk: str) -> Response:
        return Response(self.render([self.get_object()])[0])

    @extend_schema(
        summary="Request devices",
        request=ClaimInputSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={
            201: OpenApiResponse(ClaimRequestSerializer, description="Accepted."),
            202: OpenApiResponse(
                ClaimRequestSerializer,
                description="Recorded, waiting for approval (`state: pending_approval`; "
                "`approval_reasons` say why). Nothing is applied until a tenant admin or "
                "portal admin approves it (`POST .../approve/`).",
            ),
            200: OpenApiResponse(
                ClaimRequestSerializer,
                description="A retry with the same Idempotency-Key and body: the first request.",
            ),
            400: BAD_INPUT,
            409: OVER_QUOTA,
            422: KEY_REUSED,
        },
        examples=[CREATE_EXAMPLE, REQUEST_EXAMPLE],
    )
    def create(self, request: Request) -> Response:
        body = ClaimInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            claim_request, replayed = submit(
                user=request.user,
                claim=body.claim_input(),
                idempotency_key=idempotency_key(request),
            )
        except SpecErrors as error:
            raise refusal(error) from error
        claim_request.refresh_from_db()  # applying may have run already (eager tasks)
        data = self.render([claim_request])[0]
        answer: int
        if replayed:
            answer = status.HTTP_200_OK
        elif claim_request.state == ClaimRequest.State.PENDING_APPROVAL:
            answer = status.HTTP_202_ACCEPTED
        else:
            answer = status.HTTP_201_CREATED
        return Response(data, status=answer, headers={"Location": data["url"]})

    def _decide(self, request: Request, pk: str, *, approve: bool) -> Response:
        # The gates first: another tenant's request is a 404 whatever the body; a member, or a
        # tenant admin deciding their own request, a 403.
        claim_request = get_request_for_user(request.user, pk)
        if not may_decide(request.user, claim_request):
            own = claim_request.requested_by_id == request.user.pk
            raise exceptions.PermissionDenied(
                "You may not decide on your own request; another tenant admin or a portal "
                "admin does."
                if own
                else "Only the tenant's admins and portal admins approve or deny requests."
            )
        decide = approve_request if approve else deny_request
        return self._change(
            request,
            claim_request,
            DecisionInputSerializer,
            lambda body: decide(user=request.user, request=claim_request, comment=body["comment"]),
        )

    def _change(
        self,
        request: Request,
        claim_request: ClaimRequest,
        body_serializer: type[serializers.Serializer],
        change: Callable[[dict[str, Any]], object],
    ) -> Response:
        """Validate the body, make the change through its service (its refusal answers 409
        with the fields), answer the request as it is now. Call after the gate."""
        body = body_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            change(body.validated_data)
        except SpecErrors as error:
            raise refusal(error) from error
        claim_request.refresh_from_db()
        return Response(self.render([claim_request])[0])

    @extend_schema(
        summary="Approve a request waiting for approval",
        description="Tenant admins (not for their own requests) and portal admins. The quota is "
        "checked again, atomically: a request that no longer fits stays pending (409 "
        "`quota_exceeded`: raise the quota or wait). Approved, it is applied and its lease "
        "starts now. Approving an approved request returns it unchanged; a denied or ended "
        "one is a 409 `conflict`.",
        request=DecisionInputSerializer,
        responses={
            200: ClaimRequestSerializer,
            400: BAD_INPUT,
            403: OpenApiResponse(description="A member, or a tenant admin's own request."),
            404: OpenApiResponse(description="No such request in your tenants."),
            409: OVER_QUOTA,
        },
        examples=[OpenApiExample("With a comment", value={"comment": "For the paper deadline."})],
    )
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        return self._decide(request, pk, approve=True)

    @extend_schema(
        summary="Deny a request waiting for approval",
        description="Tenant admins (not for their own requests) and portal admins; `comment` "
        "is required (the requester reads it). The request ends as `denied`; nothing was made "
        "in the cluster. Denying a denied request returns it; an approved one is a 409.",
        request=DecisionInputSerializer,
        responses={
            200: ClaimRequestSerializer,
            400: BAD_INPUT,
            403: OpenApiResponse(description="A member, or a tenant admin's own request."),
            404: OpenApiResponse(description="No such request in your tenants."),
            409: STATE_CONFLICT,
        },
        examples=[
            OpenApiExample("Why", value={"comment": "Use the A100s for this."}, request_only=True)
        ],
    )
    @action(detail=True, methods=["post"])
    def deny(self, request: Request, pk: str) -> Response:
        return self._decide(request, pk, approve=False)

    @extend_schema(
        summary="Release the claim",
        description="Deletes the claim (`force`: portal admins, even while pods use it); a "
        "request waiting for approval is withdrawn. Idempotent: a request that is releasing or "
        "has ended is answered as it is (200). Refused (409 `conflict`) while pods use the claim.",
        request=ReleaseInputSerializer,
        responses={200: ClaimRequestSerializer, 400: BAD_INPUT, 409: STATE_CONFLICT},
    )
    @action(detail=True, methods=["post"])
    def release(self, request: Request, pk: str) -> Response:
        # The gate first: another tenant's request is a 404 whatever the body.
        claim_request = get_request_for_user(request.user, pk, write=True)
        return self._change(
            request,
            claim_request,
            ReleaseInputSerializer,
            lambda body: release_request(
                user=request.user, request=claim_request, force=body["force"]
            ),
        )

    @extend_schema(
        summary="Renew the lease from now",
        description="The lease again from now (default: the request's own), within the "
        "quota's maximum. A renewal the tenant's approval policy sends to approval (a lease over "
        "the quota's `approve_above_lease`, or a tenant that approves everything) is answered "
        "202 with `renewal.state: pending_approval` and `renewal.approval_reasons`: the current "
        "lease (`expires_at`) runs on until a tenant admin or portal admin approves it "
        "(`POST .../approve/`: the renewed lease starts then) or denies it. A later renewal "
        "replaces one that waits.",
        request=RenewInputSerializer,
        responses={
            200: OpenApiResponse(ClaimRequestSerializer, description="Renewed."),
            202: OpenApiResponse(
                ClaimRequestSerializer,
                description="The renewal waits for approval (`renewal` says what and why).",
            ),
            400: BAD_INPUT,
            409: STATE_CONFLICT,
        },
        examples=[OpenApiExample("A week from now", value={"lease": "P7D"}, request_only=True)],
    )
    @action(detail=True, methods=["post"])
    def renew(self, request: Request, pk: str) -> Response:
        # The gate first: another tenant's request is a 404 whatever the body.
        claim_request = get_request_for_user(request.user, pk, write=True)
        answer = self._change(
            request,
            claim_request,
            RenewInputSerializer,
            lambda body: renew_request(
                user=request.user, request=claim_request, lease=body["lease"]
            ),
        )
        if claim_request.has_pending_renewal:
            answer.status_code = status.HTTP_202_ACCEPTED
        return answer

    @extend_schema(
        summary="Would it fit? A dry run of a request",
        description="The same body and checks as creating a request, and nothing is recorded: "
        "where it would be allocated now (node, devices) or the funnel of why not, and the "
        "quota's verdict. Advice only: a request a moment later may still be refused.",
        request=ClaimInputSerializer,
        responses={200: FitReportSerializer, 400: BAD_INPUT},
        examples=[CREATE_EXAMPLE],
    )
    @action(detail=False, methods=["post"], url_path="would-it-fit", url_name="would-it-fit")
    def would_it_fit(self, request: Request) -> Response:
        body = ClaimInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            report = would_it_fit(request.user, body.claim_input())
        except SpecErrors as error:
            raise refusal(error) from error
        return Response(FitReportSerializer(report).data)


class TenantUsageView(APIView):
    """A tenant's usage per device class: held now (mirror), in flight (accepted requests not
    mirrored yet), the quota's limits and what would still fit."""

    @extend_schema(summary="A tenant's usage against its quotas", responses=TenantUsageSerializer)
    def get(self, request: Request, slug: str) -> Response:
        tenant = get_tenant_for_user(request.user, slug)
        classes = [
            {"device_class": name, "check": check} for name, check in quota_report(tenant).items()
        ]
        return Response(TenantUsageSerializer({"tenant": tenant.slug, "classes": classes}).data)


class TenantUtilisationView(APIView):
    """A tenant's GPU utilisation: its claims' devices, weighted by device-time."""

    @extend_schema(
        summary="A tenant's GPU utilisation over a time range",
        parameters=[RANGE_PARAMETER],
        responses=UTILISATION_RESPONSE,
    )
    def get(self, request: Request, slug: str) -> Response:
        tenant = get_tenant_for_user(request.user, slug)
        span = requested_range(request)
        found = scope_utilisation(UsageRollup.Scope.TENANT, tenant.slug, span)
        return utilisation_response(
            span,
            {"gpu_util": found.history if found else []},
            simulated=bool(found and found.is_simulated),
            device_hours=found.device_hours if found else [],
        )
