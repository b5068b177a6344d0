"""Serializers of the claims API: the mirrored claims (output only) and the portal's claim
requests (an input serializer mirroring :class:`claims.requests.specs.ClaimInput`, output
serializers for the request, the dry run and the usage)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from claims.api.inputs import LeaseField
from claims.models import (
    AllocatedDevice,
    ClaimConsumer,
    ClaimRequest,
    ResourceClaim,
)
from claims.requests.quota import QuotaCheck
from portal.models import Quota, Tenant
from toolkit.durations import iso_duration

if TYPE_CHECKING:
    from django.contrib.auth.models import User

__all__ = [
    "ClaimRequestSerializer",
    "ClassUsageSerializer",
    "ExplanationSerializer",
    "FitReportSerializer",
    "QuotaCheckSerializer",
    "ResourceClaimSerializer",
    "TenantUsageSerializer",
]


class AllocatedDeviceSerializer(serializers.ModelSerializer):
    device = serializers.CharField(source="device_name", read_only=True)
    device_url = serializers.SerializerMethodField(
        help_text="The device in the mirror's API, by its (driver, pool, device) identity."
    )

    class Meta:
        model = AllocatedDevice
        fields = [
            "request",
            "driver",
            "pool",
            "device",
            "device_url",
            "admin_access",
            "share_id",
            "consumed_capacity",
        ]

    def get_device_url(self, result: AllocatedDevice) -> str:
        key = f"{result.driver}/{result.pool}/{result.device_name}"
        path = reverse("api:device-detail", kwargs={"key": key})
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path


class ClaimConsumerSerializer(serializers.ModelSerializer):
    class Meta:
        model = ClaimConsumer
        fields = ["api_group", "resource", "name", "uid"]


class ResourceClaimSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    state = serializers.CharField(read_only=True, help_text="pending, allocated, in_use, deleting")
    results = AllocatedDeviceSerializer(source="allocated_devices", many=True, read_only=True)
    reserved_for = ClaimConsumerSerializer(source="consumers", many=True, read_only=True)
    spec = serializers.JSONField(read_only=True)

    class Meta:
        model = ResourceClaim
        fields = [
            "url",
            "namespace",
            "name",
            "uid",
            "resource_version",
            "state",
            "is_allocated",
            "spec",
            "results",
            "allocation_node_selector",
            "reserved_for",
            "owner_pod",
            "created_at",
            "problems",
        ]

    def get_url(self, claim: ResourceClaim) -> str:
        key = f"{claim.namespace}/{claim.name}"
        path = reverse("api:resourceclaim-detail", kwargs={"key": key})
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path


# --- claim requests: input ---------------------------------------------------------------------


# --- claim requests: output --------------------------------------------------------------------


class QuotaLimitSerializer(serializers.ModelSerializer):
    max_lease = serializers.SerializerMethodField()

    class Meta:
        model = Quota
        fields = ["max_devices", "max_device_memory", "max_claims", "max_lease"]

    @extend_schema_field({"type": "string", "nullable": True, "example": "P7D"})
    def get_max_lease(self, quota: Quota) -> str | None:
        return iso_duration(quota.max_lease) if quota.max_lease else None


class MeasuresSerializer(serializers.Serializer):
    devices = serializers.IntegerField()
    memory_bytes = serializers.IntegerField()
    claims = serializers.IntegerField()


class RoomSerializer(serializers.Serializer):
    devices = serializers.IntegerField(allow_null=True, help_text="Null: unlimited.")
    memory_bytes = serializers.IntegerField(allow_null=True, help_text="Null: unlimited.")
    claims = serializers.IntegerField(allow_null=True, help_text="Null: unlimited.")


def _used(usage: Any) -> dict[str, int]:
    return {"devices": usage.devices, "memory_bytes": usage.memory_bytes, "claims": usage.claims}


def _in_flight(usage: Any) -> dict[str, int]:
    return {
        "devices": usage.in_flight_devices,
        "memory_bytes": usage.in_flight_memory_bytes,
        "claims": usage.in_flight_claims,
    }


class QuotaCheckSerializer(serializers.Serializer):
    """A quota's verdict on asking for more of a class (``claims.requests.quota.QuotaCheck``)."""

    fits = serializers.BooleanField()
    problems = serializers.ListField(child=serializers.CharField())
    asked = serializers.SerializerMethodField()
    used = serializers.SerializerMethodField(help_text="Held now, as the mirror shows it.")
    in_flight = serializers.SerializerMethodField(help_text="Accepted, not mirrored yet.")
    limit = QuotaLimitSerializer(source="quota", allow_null=True, help_text="Null: no quota.")
    room = serializers.SerializerMethodField(help_text="What would still fit.")

    @extend_schema_field(MeasuresSerializer)
    def get_asked(self, check: QuotaCheck) -> dict[str, int]:
        return {
            "devices": check.asked_devices,
            "memory_bytes": check.asked_memory_bytes,
            "claims": 1,
        }

    @extend_schema_field(MeasuresSerializer)
    def get_used(self, check: QuotaCheck) -> dict[str, int]:
        return _used(check.usage)

    @extend_schema_field(MeasuresSerializer)
    def get_in_flight(self, check: QuotaCheck) -> dict[str, int]:
        return _in_flight(check.usage)

    @extend_schema_field(RoomSerializer)
    def get_room(self, check: QuotaCheck) -> dict[str, int | None]:
        return check.room()


class ClassUsageSerializer(serializers.Serializer):
    """One device class of a tenant's usage; renders ``{"device_class": name, "check":
    QuotaCheck}``, the check being that of asking for nothing more."""

    device_class = serializers.CharField()
    used = serializers.SerializerMethodField(help_text="Held now, as the mirror shows it.")
    in_flight = serializers.SerializerMethodField(help_text="Accepted, not mirrored yet.")
    limit = QuotaLimitSerializer(source="check.quota", allow_null=True, help_text="Null: no quota.")
    room = serializers.SerializerMethodField(help_text="What would still fit.")

    @extend_schema_field(MeasuresSerializer)
    def get_used(self, entry: dict[str, Any]) -> dict[str, int]:
        return _used(entry["check"].usage)

    @extend_schema_field(MeasuresSerializer)
    def get_in_flight(self, entry: dict[str, Any]) -> dict[str, int]:
        return _in_flight(entry["check"].usage)

    @extend_schema_field(RoomSerializer)
    def get_room(self, entry: dict[str, Any]) -> dict[str, int | None]:
        return entry["check"].room()


class TenantUsageSerializer(serializers.Serializer):
    tenant = serializers.CharField(help_text="The tenant's slug.")
    classes = ClassUsageSerializer(many=True)


class ExplanationSerializer(serializers.Serializer):
    """One (sub)request's funnel on its closest node: devices left after each stage."""

    claim = serializers.CharField()
    request = serializers.CharField()
    node = serializers.CharField(allow_null=True)
    counts = serializers.DictField(
        child=serializers.IntegerField(),
        help_text=(
            "Devices left after each stage: visible, class, selectors, free (not held by a "
            "claim; the device state free also excludes blocked and tainted devices), capacity "
            "(shared counters and capacity left), tolerated, constraints."
        ),
    )
    blockingStage = serializers.CharField(allow_null=True)  # noqa: N815 - the funnel's spelling
    # A declared field (the serializer's metaclass takes it off the class), not .errors.
    errors = serializers.ListField(child=serializers.CharField())  # type: ignore[assignment]


class WhyPendingSerializer(serializers.Serializer):
    pending = serializers.BooleanField(help_text="The claim waits for an allocation.")
    fits = serializers.BooleanField(
        required=False, help_text="The allocator would place it now (the scheduler decides)."
    )
    node = serializers.CharField(required=False, allow_null=True)
    error = serializers.CharField(required=False, allow_null=True)
    funnels = ExplanationSerializer(many=True, help_text="Why not: the funnel per (sub)request.")
    hints = serializers.ListField(child=serializers.CharField(), required=False)


class FitReportSerializer(serializers.Serializer):
    fits = serializers.BooleanField(help_text="Allocatable now and within the quota.")
    allocatable = serializers.BooleanField(help_text="The cluster has room for it now.")
    tenant = serializers.CharField(source="namespace.tenant.slug")
    mode = serializers.CharField()
    lease = LeaseField(allow_null=True)
    held_devices = serializers.IntegerField(help_text="What the quota would hold for it.")
    held_memory_bytes = serializers.IntegerField()
    node = serializers.CharField(source="placement.node", allow_null=True)
    devices = serializers.ListField(
        child=serializers.DictField(),
        help_text="The allocation results it would get (driver, pool, device, request).",
    )
    error = serializers.CharField(source="placement.error", allow_null=True)
    explanations = serializers.SerializerMethodField(
        help_text="Why it is not allocatable: the funnel per (sub)request."
    )
    quota = QuotaCheckSerializer()
    needs_approval = serializers.BooleanField(
        help_text="Submitting it would wait for approval (``approval_reasons`` say why)."
    )
    approval_reasons = serializers.ListField(child=serializers.CharField())

    @extend_schema_field(ExplanationSerializer(many=True))
    def get_explanations(self, report: Any) -> list[dict[str, Any]]:
        return [explanation.to_json() for explanation in report.placement.explanations]


class RenewalSerializer(serializers.Serializer):
    """A renewal of the lease waiting for approval (``ClaimRequest.renewal_*``)."""

    state = serializers.SerializerMethodField(help_text="Always pending_approval.")
    lease = LeaseField(
        source="renewal_lease", read_only=True, help_text="The lease asked, from its approval."
    )
    approval_reasons = serializers.ListField(
        source="renewal_reasons", child=serializers.CharField(), read_only=True
    )
    requested_by = serializers.SerializerMethodField(help_text="Who asked for the renewal.")
    requested_at = serializers.DateTimeField(source="renewal_requested_at", read_only=True)

    def get_state(self, request: ClaimRequest) -> str:
        return str(ClaimRequest.State.PENDING_APPROVAL)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_requested_by(self, request: ClaimRequest) -> str | None:
        asker = request.renewal_requested_by
        return asker.get_username() if asker is not None else None


class ClaimRequestSerializer(serializers.ModelSerializer):
    """A claim request, with what the mirror shows of its claim (``devices``, ``consumers``)."""

    url = serializers.SerializerMethodField()
    tenant: serializers.SlugRelatedField[Tenant] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    device_class = serializers.CharField(source="device_class_name", read_only=True)
    spec = serializers.JSONField(read_only=True, help_text="The ResourceClaim's spec.")
    form = serializers.JSONField(read_only=True, help_text="The input as submitted.")
    allocation = serializers.JSONField(
        read_only=True, help_text="Reservations: the status.allocation the portal wrote."
    )
    lease = LeaseField(read_only=True, allow_null=True)
    node = serializers.CharField(source="node_name", read_only=True)
    requested_by: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", read_only=True
    )
    approval_reasons = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        help_text="Why the request waits (or waited) for approval: one line per rule crossed.",
    )
    decided_by: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        allow_null=True,
        help_text="Who approved or denied it (null: nobody decided).",
    )
    decision_comment = serializers.CharField(read_only=True)
    renewal = serializers.SerializerMethodField(
        help_text="A renewal of the lease waiting for approval (null: none waits). The current "
        "lease (`expires_at`) runs on until it is decided."
    )
    devices = serializers.SerializerMethodField(
        help_text="The mirrored claim's allocation results (empty until mirrored)."
    )
    consumers = serializers.SerializerMethodField(help_text="Pods reserving the mirrored claim.")

    class Meta:
        model = ClaimRequest
        fields = [
            "id",
            "url",
            "tenant",
            "namespace",
            "name",
            "device_class",
            "mode",
            "sharing",
            "state",
            "reason",
            "admin_access",
            "spec",
            "form",
            "held_devices",
            "held_memory_bytes",
            "lease",
            "expires_at",
            "allocation",
            "node",
            "devices",
            "consumers",
            "requested_by",
            "approval_reasons",
            "decided_by",
            "decided_at",
            "decision_comment",
            "renewal",
            "created_at",
            "applied_at",
            "ended_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_url(self, claim_request: ClaimRequest) -> str:
        path = reverse("api:claimrequest-detail", kwargs={"pk": claim_request.pk})
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path

    def _claim(self, claim_request: ClaimRequest) -> ResourceClaim | None:
        claims = self.context.get("claims") or {}
        return claims.get(claim_request.pk)

    @extend_schema_field(RenewalSerializer(allow_null=True))
    def get_renewal(self, claim_request: ClaimRequest) -> dict[str, Any] | None:
        if not claim_request.has_pending_renewal:
            return None
        return dict(RenewalSerializer(claim_request).data)

    @extend_schema_field(AllocatedDeviceSerializer(many=True))
    def get_devices(self, claim_request: ClaimRequest) -> list[Any]:
        claim = self._claim(claim_request)
        if claim is None:
            return []
        # many=True: a ListSerializer, whose data is a list.
        return cast(
            "list[Any]",
            AllocatedDeviceSerializer(
                claim.allocated_devices.all(), many=True, context=self.context
            ).data,
        )

    @extend_schema_field(ClaimConsumerSerializer(many=True))
    def get_consumers(self, claim_request: ClaimRequest) -> list[Any]:
        claim = self._claim(claim_request)
        if claim is None:
            return []
        # many=True: a ListSerializer, whose data is a list.
        return cast("list[Any]", ClaimConsumerSerializer(claim.consumers.all(), many=True).data)
