"""Serializers of the claims API: the mirrored claims (output only) and the portal's claim
requests (an input serializer mirroring :class:`claims.requests.specs.ClaimInput`, output
serializers for the request, the dry run and the usage)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from claims.models import (
    AllocatedDevice,
    AllocationMode,
    ClaimConsumer,
    ClaimRequest,
    ResourceClaim,
)
from claims.requests.quota import QuotaCheck
from claims.requests.specs import (
    MAX_ALTERNATIVES,
    MAX_COUNT,
    MAX_SELECTORS,
    PRESETS,
    Alternative,
    ClaimInput,
)
from portal.models import Quota, Tenant
from toolkit.durations import DurationError, iso_duration, parse_duration

if TYPE_CHECKING:
    from django.contrib.auth.models import User

__all__ = [
    "ClaimInputSerializer",
    "ClaimRequestSerializer",
    "ClassUsageSerializer",
    "ExplanationSerializer",
    "FitReportSerializer",
    "QuotaCheckSerializer",
    "ReleaseInputSerializer",
    "RenewInputSerializer",
    "ResourceClaimSerializer",
    "TenantUsageSerializer",
]

MAX_SELECTOR_CHARS = 10_240  # Kubernetes' limit on one CEL selector


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


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know (a typo must not silently drop a setting): a 400
    naming each of them."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = sorted(str(key) for key in data if key not in self.fields)
            if unknown:
                known = ", ".join(self.fields)
                raise serializers.ValidationError(
                    {name[:100]: [f"Unknown field; the fields are: {known}."] for name in unknown}
                )
        return super().to_internal_value(data)


@extend_schema_field(
    {
        "oneOf": [
            {"type": "integer", "minimum": 1, "maximum": MAX_COUNT},
            {"type": "string", "enum": ["All"]},
        ],
        "description": f"How many devices: 1 to {MAX_COUNT}, or All (every matching device).",
        "example": 1,
    }
)
class CountField(serializers.Field):
    """1..32 or ``"All"`` (None inside the portal); the range is the services' to check."""

    default_error_messages = {"invalid": f"Expected a whole number from 1 to {MAX_COUNT}, or All."}

    def to_internal_value(self, data: Any) -> int | None:
        if isinstance(data, str) and data.strip().lower() == "all":
            return None
        if isinstance(data, bool) or not isinstance(data, int | str):
            self.fail("invalid")
        if isinstance(data, str):
            if not (data.isascii() and data.isdigit()) or len(data) > 6:
                self.fail("invalid")
            data = int(data)
        if not -(10**6) < data < 10**6:
            self.fail("invalid")
        return data

    def to_representation(self, value: int | None) -> Any:
        return "All" if value is None else value


@extend_schema_field(
    {
        "type": "string",
        "description": "ISO 8601 (P7D, PT12H, P1DT12H) or short (7d, 12h, 1d12h).",
        "example": "P7D",
        "maxLength": 40,
    }
)
class LeaseField(serializers.Field):
    """A lease as the API writes it: ISO 8601, short forms accepted; rendered as ISO 8601."""

    default_error_messages = {"invalid": "Write a duration, e.g. P7D, PT12H, 7d or 12h."}

    def to_internal_value(self, data: Any) -> timedelta:
        if not isinstance(data, str) or len(data) > 40:
            self.fail("invalid")
        try:
            return parse_duration(data)
        except DurationError as error:
            raise serializers.ValidationError(str(error)) from None

    def to_representation(self, value: timedelta) -> str:
        return iso_duration(value)


def _name(max_length: int, **kwargs: Any) -> serializers.CharField:
    return serializers.CharField(max_length=max_length, trim_whitespace=False, **kwargs)


def _selectors() -> serializers.ListField:
    return serializers.ListField(
        child=_name(MAX_SELECTOR_CHARS),
        required=False,
        max_length=MAX_SELECTORS,
        help_text="CEL expressions a device must satisfy, e.g. "
        'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100").',
    )


class AlternativeInputSerializer(StrictSerializer):
    device_class = _name(253)
    count = CountField(required=False, default=1)
    selectors = _selectors()


class ConfigInputSerializer(StrictSerializer):
    driver = _name(253, help_text="The driver the opaque config is for.")
    parameters = serializers.DictField(
        help_text='The driver\'s config object, e.g. {"apiVersion": '
        '"resource.nvidia.com/v1beta1", "kind": "GpuConfig", ...}.'
    )


class ClaimInputSerializer(StrictSerializer):
    """The body of a claim request (and of its dry run): :class:`claims.requests.specs.ClaimInput`.
    This checks the shape; the services check the meaning (names, CEL, namespace, class,
    quota), so every entry point refuses the same things with the same words."""

    namespace = _name(63, help_text="One of your tenant's namespaces.")
    name = _name(253, help_text="The ResourceClaim's name (a DNS subdomain).")
    device_class = _name(253, help_text="The DeviceClass to draw devices from.")
    count = CountField(required=False, default=1)
    selectors = _selectors()
    # many=True makes a ListSerializer, which takes max_length: the stubs type the child's call.
    alternatives = AlternativeInputSerializer(  # type: ignore[call-arg]
        many=True,
        required=False,
        max_length=MAX_ALTERNATIVES,
        help_text="Fallbacks, in order (firstAvailable): another class, count or selectors.",
    )
    constraint = serializers.ChoiceField(
        choices=["", *PRESETS],
        required=False,
        default="",
        help_text="A preset the devices must share: "
        + ", ".join(f"{key} ({label})" for key, (label, _) in PRESETS.items())
        + ".",
    )
    match_attributes = serializers.ListField(
        child=_name(320), required=False, max_length=8, help_text="Attributes all devices share."
    )
    distinct_attributes = serializers.ListField(
        child=_name(320),
        required=False,
        max_length=8,
        help_text="Attributes all devices differ in.",
    )
    sharing = serializers.ChoiceField(
        choices=ClaimRequest.Sharing.choices, required=False, default=ClaimRequest.Sharing.CLAIM
    )
    # As ``alternatives``: a ListSerializer, which takes max_length.
    config = ConfigInputSerializer(many=True, required=False, max_length=8)  # type: ignore[call-arg]
    admin_access = serializers.BooleanField(
        required=False, default=False, help_text="Portal admins, in admin-access namespaces."
    )
    lease = LeaseField(
        required=False,
        allow_null=True,
        default=None,
        help_text="How long to hold the claim. Omitted: the longest lease that needs no "
        "approval where the quota sends longer leases to approval, else the quota's longest.",
    )
    mode = serializers.ChoiceField(
        choices=AllocationMode.choices,
        required=False,
        allow_blank=True,
        default="",
        help_text="The class's policy when blank; another mode is for portal admins.",
    )

    def claim_input(self) -> ClaimInput:
        """The validated body as the services' input."""
        data = self.validated_data
        return ClaimInput(
            namespace=data["namespace"],
            name=data["name"],
            device_class_name=data["device_class"],
            count=data["count"],
            selectors=tuple(data.get("selectors", ())),
            alternatives=tuple(
                Alternative(
                    device_class_name=item["device_class"],
                    count=item["count"],
                    selectors=tuple(item.get("selectors", ())),
                )
                for item in data.get("alternatives", ())
            ),
            constraint=data["constraint"],
            match_attributes=tuple(data.get("match_attributes", ())),
            distinct_attributes=tuple(data.get("distinct_attributes", ())),
            sharing=data["sharing"],
            config=tuple(
                {"driver": item["driver"], "parameters": item["parameters"]}
                for item in data.get("config", ())
            ),
            admin_access=data["admin_access"],
            lease=data["lease"],
            mode=data["mode"],
        )


class DecisionInputSerializer(StrictSerializer):
    comment = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=2000,
        help_text="Why: optional when approving, required when denying (the requester reads it).",
    )


class ReleaseInputSerializer(StrictSerializer):
    force = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Portal admins: release even while pods use the claim.",
    )


class RenewInputSerializer(StrictSerializer):
    lease = LeaseField(
        required=False,
        allow_null=True,
        default=None,
        help_text="The new lease, from now; the request's own lease when omitted.",
    )


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
