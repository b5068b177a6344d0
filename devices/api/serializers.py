"""Output serializers of the cluster-mirror API (read-only)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from devices.api.device_rows import DEVICE_COLUMNS, DEVICE_DOCUMENTS, DEVICE_FLAGS
from devices.filtersets import drivers_named_by
from devices.models import Device, DeviceClass, Node, ResourceSlice

__all__ = [
    "DeviceClassSerializer",
    "DeviceSerializer",
    "LatestReadingSerializer",
    "NodeSerializer",
    "ResourceSliceSerializer",
]


class GpuModelSerializer(serializers.Serializer):
    model = serializers.CharField()
    count = serializers.IntegerField()


class NodeSerializer(serializers.ModelSerializer):
    """A node annotated by ``Node.objects.with_device_counts()``; ``gpus`` comes from the
    ``gpu_models`` context entry (``Node.objects.gpu_models()`` of the page)."""

    url = serializers.HyperlinkedIdentityField(view_name="api:node-detail", lookup_field="name")
    labels = serializers.DictField(child=serializers.CharField(), read_only=True)
    device_count = serializers.IntegerField(read_only=True)
    free_count = serializers.IntegerField(read_only=True)
    allocated_count = serializers.IntegerField(read_only=True)
    shared_count = serializers.IntegerField(read_only=True)
    blocked_count = serializers.IntegerField(read_only=True)
    tainted_count = serializers.IntegerField(read_only=True)
    gpus = serializers.SerializerMethodField(
        help_text="Whole GPUs by model: DRA devices (no partitions) and device-plugin GPUs."
    )

    class Meta:
        model = Node
        fields = [
            "url",
            "name",
            "uid",
            "resource_version",
            "is_ready",
            "is_schedulable",
            "labels",
            "extended_resources",
            "device_count",
            "free_count",
            "allocated_count",
            "shared_count",
            "blocked_count",
            "tainted_count",
            "gpus",
            "problems",
        ]

    @extend_schema_field(GpuModelSerializer(many=True))
    def get_gpus(self, node: Node) -> list[dict[str, Any]]:
        models = self.context.get("gpu_models", {}).get(node.name, [])
        return [{"model": model, "count": count} for model, count in models]


class HolderSerializer(serializers.Serializer):
    claim = serializers.CharField(
        allow_null=True, help_text="namespace/name; null for a claim in a tenant you are not in."
    )
    url = serializers.CharField(allow_null=True)
    request = serializers.CharField(allow_null=True)
    share_id = serializers.CharField(allow_blank=True)


def _holder(result: Any, request: Any) -> dict[str, Any]:
    """One allocation result of a device, anonymous when its claim is not visible (the
    queryset's ``with_holders(user)`` left ``result.visible_claim`` empty)."""
    claim = result.visible_claim
    if claim is None:
        return {"claim": None, "url": None, "request": None, "share_id": result.share_id}
    path = reverse("api:resourceclaim-detail", kwargs={"key": f"{claim.namespace}/{claim.name}"})
    return {
        "claim": f"{claim.namespace}/{claim.name}",
        "url": request.build_absolute_uri(path) if request else path,
        "request": result.request,
        "share_id": result.share_id,
    }


class DeviceSerializer(serializers.ModelSerializer):
    """A device, its state (kept by the mirror) and why, and the claims holding it; from a
    queryset fetched ``with_holders(user)``. Addressed by ``driver``/``pool``/``name``."""

    url = serializers.SerializerMethodField()
    pool = serializers.CharField(source="pool_name", read_only=True)
    resource_slice: serializers.SlugRelatedField[ResourceSlice] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    state = serializers.CharField(
        read_only=True, help_text="free, allocated, shared, blocked or tainted"
    )
    held_by = serializers.SerializerMethodField(help_text="Allocation results holding it.")
    observed_by = serializers.SerializerMethodField(
        help_text="Admin-access results: they observe the device without holding it."
    )

    class Meta:
        model = Device
        fields = [
            "url",
            "driver",
            "pool",
            "name",
            "resource_slice",
            *DEVICE_COLUMNS,
            "held_by",
            "observed_by",
            *DEVICE_FLAGS,
            *DEVICE_DOCUMENTS,
        ]

    def get_url(self, device: Device) -> str:
        key = f"{device.driver}/{device.pool_name}/{device.name}"
        path = reverse("api:device-detail", kwargs={"key": key})
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path

    def _results(self, device: Device, *, admin_access: bool) -> list[dict[str, Any]]:
        request = self.context.get("request")
        return [
            _holder(result, request)
            for result in device.allocations.all()
            if result.admin_access == admin_access
        ]

    @extend_schema_field(HolderSerializer(many=True))
    def get_held_by(self, device: Device) -> list[dict[str, Any]]:
        return self._results(device, admin_access=False)

    @extend_schema_field(HolderSerializer(many=True))
    def get_observed_by(self, device: Device) -> list[dict[str, Any]]:
        return self._results(device, admin_access=True)


class DeviceClassSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(
        view_name="api:deviceclass-detail", lookup_field="name"
    )
    drivers = serializers.SerializerMethodField(
        help_text="Drivers the selectors compare device.driver against."
    )
    matching_device_count = serializers.IntegerField(
        read_only=True, help_text="Devices every selector accepts (free or not)."
    )
    free_device_count = serializers.IntegerField(
        read_only=True,
        help_text=(
            "Of those, the devices whose state is free (a claim for exactly one of them is "
            "granted now); the device classes page's Free."
        ),
    )

    class Meta:
        model = DeviceClass
        fields = [
            "url",
            "name",
            "uid",
            "resource_version",
            "selectors",
            "config",
            "extended_resource_name",
            "drivers",
            "matching_device_count",
            "free_device_count",
            "created_at",
            "problems",
        ]

    def get_drivers(self, device_class: DeviceClass) -> list[str]:
        return sorted(drivers_named_by(device_class))


class ResourceSliceSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(
        view_name="api:resourceslice-detail", lookup_field="name"
    )

    class Meta:
        model = ResourceSlice
        fields = [
            "url",
            "name",
            "uid",
            "resource_version",
            "driver",
            "pool_name",
            "pool_generation",
            "resource_slice_count",
            "node_selection",
            "node_name",
            "node_selector",
            "device_count",
            "created_at",
            "problems",
        ]


class PartitionLoadSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text="Partitions read in the last two minutes.")
    gpu_util_min = serializers.IntegerField(source="low")
    gpu_util_max = serializers.IntegerField(source="high")


class LatestReadingSerializer(serializers.Serializer):
    """A device's latest reading, as its page shows it. Units are dcgm-exporter's."""

    # Renders a devices.telemetry.reads.LatestReading (the reading, its staleness, partitions).

    driver = serializers.CharField(source="reading.driver")
    pool = serializers.CharField(source="reading.pool_name")
    device = serializers.CharField(source="reading.device_name")
    sampled_at = serializers.DateTimeField(source="reading.sampled_at")
    stale = serializers.BooleanField(
        source="is_stale", help_text="Older than two minutes: its source is failing or gone."
    )
    simulated = serializers.BooleanField(source="reading.is_simulated")
    gpu_util = serializers.IntegerField(
        source="reading.gpu_util",
        allow_null=True,
        help_text="%; null where NVML reports none (a GPU in MIG mode: see partitions).",
    )
    mem_copy_util = serializers.IntegerField(source="reading.mem_copy_util", allow_null=True)
    fb_used_mib = serializers.IntegerField(source="reading.fb_used_mib", allow_null=True)
    fb_total_mib = serializers.IntegerField(source="reading.fb_total_mib", allow_null=True)
    memory_used = serializers.SerializerMethodField(help_text="% of the device's memory.")
    power_w = serializers.FloatField(source="reading.power_w", allow_null=True)
    temperature_c = serializers.IntegerField(source="reading.temperature_c", allow_null=True)
    partitions = PartitionLoadSerializer(
        allow_null=True,
        help_text="A GPU in MIG mode (no utilisation of its own): what its partitions read now.",
    )

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_memory_used(self, latest: Any) -> float | None:
        fraction = latest.reading.fb_used_fraction
        return None if fraction is None else round(fraction * 100, 1)
