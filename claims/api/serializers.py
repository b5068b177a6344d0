"""Output serializers of the claims API (read-only)."""

from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers

from claims.models import AllocatedDevice, ClaimConsumer, ResourceClaim

__all__ = ["ResourceClaimSerializer"]


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
