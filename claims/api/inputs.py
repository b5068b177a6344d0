"""The claims API's input serializers: strict (an unknown field is a 400 naming the known ones),
mirroring :class:`claims.requests.specs.ClaimInput` and the request actions' bodies."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from claims.models import (
    AllocationMode,
    ClaimRequest,
)
from claims.requests.specs import (
    MAX_ALTERNATIVES,
    MAX_COUNT,
    MAX_SELECTORS,
    PRESETS,
    Alternative,
    ClaimInput,
)
from toolkit.durations import DurationError, iso_duration, parse_duration

if TYPE_CHECKING:
    pass


__all__ = [
    "AlternativeInputSerializer",
    "ClaimInputSerializer",
    "ConfigInputSerializer",
    "CountField",
    "DecisionInputSerializer",
    "LeaseField",
    "MAX_SELECTOR_CHARS",
    "ReleaseInputSerializer",
    "RenewInputSerializer",
    "StrictSerializer",
]

MAX_SELECTOR_CHARS = 10_240  # Kubernetes' limit on one CEL selector


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
