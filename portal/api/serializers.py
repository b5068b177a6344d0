"""Serializers of the tenancy API."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from rest_framework import serializers

from portal.models import AuditEvent, Membership, Quota, Tenant
from portal.services.tenants import (
    MAX_LEASE,
    MAX_NAMESPACES_PER_TENANT,
    cluster_device_class_names,
)

__all__ = [
    "AuditEventSerializer",
    "CurrentUserSerializer",
    "QuotaSerializer",
    "TenantSerializer",
]


class MembershipSerializer(serializers.ModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
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

    class Meta:
        model = Tenant
        fields = [
            "url",
            "id",
            "name",
            "slug",
            "description",
            "requires_approval",
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
    device_class_in_cluster = serializers.SerializerMethodField(
        help_text="Whether the mirrored cluster has this DeviceClass (false also while the "
        "mirror holds no DeviceClass yet)."
    )

    class Meta:
        model = Quota
        fields = [
            "id",
            "tenant",
            "device_class_name",
            "max_devices",
            "max_device_memory",
            "max_claims",
            "max_lease",
            "device_class_in_cluster",
            "updated_at",
        ]
        read_only_fields = ["id", "updated_at"]
        extra_kwargs = {"max_lease": {"max_value": MAX_LEASE}}

    def get_device_class_in_cluster(self, quota: Quota) -> bool:
        annotated = getattr(quota, "device_class_in_cluster", None)
        if annotated is not None:
            return bool(annotated)
        # A quota just written by a service carries no annotation: look it up once.
        return quota.device_class_name in cluster_device_class_names()


class AuditEventSerializer(serializers.ModelSerializer):
    tenant = serializers.SlugRelatedField(
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
