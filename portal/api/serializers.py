"""Serializers of the tenancy API."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.forms import read_duration
from portal.models import AuditEvent, Membership, Quota, Tenant
from portal.services.tenants import (
    MAX_NAMESPACES_PER_TENANT,
    QUOTA_FIELDS,
    cluster_device_class_names,
)
from toolkit.durations import DurationError, iso_duration
from toolkit.quantities import MAX_BYTES, QuantityError, format_bytes, parse_bytes

__all__ = [
    "AuditEventSerializer",
    "CurrentUserSerializer",
    "MemberAddSerializer",
    "MemberRoleSerializer",
    "MemberSerializer",
    "QuotaSerializer",
    "TenantSerializer",
]


@extend_schema_field(
    {
        "type": "string",
        "nullable": True,
        "example": "640Gi",
        "description": "A Kubernetes quantity of bytes (640Gi, 80G); an integer of bytes is "
        "accepted too. Null: unlimited.",
    }
)
class QuantityField(serializers.Field):
    """Bytes as a Kubernetes quantity: ``"640Gi"`` out; a quantity or a whole number in."""

    default_error_messages = {"invalid": "{message}"}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_representation(self, value: int) -> str:
        return format_bytes(value)

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool):
            self.fail("invalid", message="Write a quantity such as 640Gi.")
        if isinstance(data, int):
            if not 0 <= data <= MAX_BYTES:
                self.fail("invalid", message=f"Bytes must be between 0 and {MAX_BYTES}.")
            return data
        if not isinstance(data, str):
            self.fail("invalid", message="Write a quantity such as 640Gi.")
        try:
            return parse_bytes(data)
        except QuantityError as error:
            self.fail("invalid", message=str(error))
        raise AssertionError("unreachable")  # pragma: no cover


@extend_schema_field(
    {
        "type": "string",
        "nullable": True,
        "example": "P7D",
        "description": "An ISO 8601 duration (P7D, PT12H); 7d and 12h are accepted too. "
        "Null: unlimited.",
    }
)
class IsoDurationField(serializers.Field):
    """A duration: ISO 8601 out (``"P7D"``); ISO 8601, ``7d``/``12h`` or ``"7 00:00:00"`` in.
    Bounds are the services' (they answer with the field named)."""

    default_error_messages = {"invalid": "{message}"}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_representation(self, value: dt.timedelta) -> str:
        return iso_duration(value)

    def to_internal_value(self, data: Any) -> dt.timedelta:
        if not isinstance(data, str) or not data.strip():
            self.fail("invalid", message="Write a duration such as P7D or PT12H.")
        try:
            return read_duration(data)
        except DurationError as error:
            self.fail("invalid", message=str(error))
        raise AssertionError("unreachable")  # pragma: no cover


class MembershipSerializer(serializers.ModelSerializer):
    tenant: serializers.SlugRelatedField[Tenant] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["tenant", "username", "role"]


class CurrentUserSerializer(serializers.ModelSerializer):
    memberships = MembershipSerializer(many=True, read_only=True)
    is_portal_admin = serializers.BooleanField(source="is_staff", read_only=True)

    class Meta:
        model = get_user_model()
        fields = [
            "id",
            "username",
            "email",
            "first_name",
            "last_name",
            "is_portal_admin",
            "memberships",
        ]


class TenantSerializer(serializers.ModelSerializer):
    namespaces = serializers.ListField(
        child=serializers.CharField(max_length=63),
        source="namespace_names",
        required=False,
        max_length=MAX_NAMESPACES_PER_TENANT,
        help_text="Kubernetes namespaces the tenant owns.",
    )
    url = serializers.HyperlinkedIdentityField(view_name="api:tenant-detail", lookup_field="slug")
    max_token_lifetime = IsoDurationField(
        help_text="Members' API tokens expire within this (ISO 8601, e.g. P90D). Null: no limit."
    )

    class Meta:
        model = Tenant
        fields = [
            "url",
            "id",
            "name",
            "slug",
            "description",
            "requires_approval",
            "max_token_lifetime",
            "namespaces",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]
        extra_kwargs = {"slug": {"required": False}}

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "namespace_names" in attrs:
            attrs["namespaces"] = attrs.pop("namespace_names")
        return attrs


class QuotaSerializer(serializers.ModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", queryset=Tenant.objects.all())
    max_device_memory = QuantityField(help_text="Sum of the devices' memory, e.g. 640Gi.")
    max_lease = IsoDurationField(help_text="Longest lease a claim may ask for, e.g. P7D.")
    approve_above_memory = QuantityField(
        help_text="Requests for more device memory than this wait for approval."
    )
    approve_above_lease = IsoDurationField(
        help_text="Requests for a longer lease than this wait for approval."
    )
    device_class_in_cluster = serializers.SerializerMethodField(
        help_text="Whether the mirrored cluster has this DeviceClass (false also while the "
        "mirror holds no DeviceClass yet)."
    )

    class Meta:
        model = Quota
        fields = [
            "id",
            "tenant",
            *QUOTA_FIELDS,
            "device_class_in_cluster",
            "updated_at",
        ]
        read_only_fields = ["id", "updated_at"]

    def get_device_class_in_cluster(self, quota: Quota) -> bool:
        annotated = getattr(quota, "device_class_in_cluster", None)
        if annotated is not None:
            return bool(annotated)
        # A quota just written by a service carries no annotation: look it up once.
        return quota.device_class_name in cluster_device_class_names()


class AuditEventSerializer(serializers.ModelSerializer):
    tenant: serializers.SlugRelatedField[Tenant] = serializers.SlugRelatedField(
        slug_field="slug",
        read_only=True,
        allow_null=True,
        help_text="Null for events outside a tenant, or of a tenant since deleted.",
    )

    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "created_at",
            "actor_name",
            "action",
            "tenant",
            "object_type",
            "object_id",
            "object_repr",
            "before",
            "after",
        ]


class MemberSerializer(serializers.ModelSerializer):
    """One member of a tenant."""

    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["username", "role", "created_at"]
        read_only_fields = fields


class MemberAddSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Membership.Role.choices, default=Membership.Role.MEMBER)


class MemberRoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Membership.Role.choices)


class ConfigurationInputSerializer(serializers.Serializer):
    """The body of a configuration apply: the document and how to apply it. Refuses fields it
    does not know."""

    document = serializers.JSONField(
        help_text="The configuration document (apiVersion dra-portal/v1, kind "
        "PortalConfiguration, tenants), as JSON."
    )
    prune = serializers.BooleanField(
        default=False,
        help_text="Also remove tenants, namespaces, members and quotas the document does not name.",
    )
    dry_run = serializers.BooleanField(
        default=False, help_text="Plan only: answer what would change and change nothing."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = set(self.initial_data) - set(self.fields)
        if unknown:
            raise serializers.ValidationError({key: ["Unknown field."] for key in sorted(unknown)})
        return attrs


class ConfigurationChangeSerializer(serializers.Serializer):
    op = serializers.ChoiceField(choices=["create", "update", "delete"])
    kind = serializers.CharField(help_text="tenant, namespace, member, quota or class_policy.")
    tenant = serializers.CharField(allow_blank=True, help_text="Blank for a class policy.")
    name = serializers.CharField()
    values = serializers.DictField(
        help_text="Each changed field's before and after.", child=serializers.DictField()
    )


class ConfigurationOutcomeSerializer(serializers.Serializer):
    applied = serializers.BooleanField(help_text="False for a dry run or when nothing changed.")
    changes = ConfigurationChangeSerializer(many=True)
