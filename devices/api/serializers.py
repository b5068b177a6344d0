"""Output serializers of the cluster-mirror API (read-only)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from devices.filtersets import drivers_named_by
from devices.models import Device, DeviceClass, Node, ResourceSlice

__all__ = [
    "DeviceClassSerializer",
    "DeviceSerializer",
    "NodeSerializer",
    "ResourceSliceSerializer",
]


class GpuModelSerializer(serializers.Serializer):
    model = serializers.CharField()
    count = serializers.IntegerField()


class NodeSerializer(serializers.ModelSerializer):
    """A node annotated by ``devices.tables.with_device_counts``; ``gpus`` comes from the
    ``gpu_models`` context entry (``gpu_models_by_node`` of the page)."""

    url = serializers.HyperlinkedIdentityField(view_name="api:node-detail", lookup_field="name")
    labels = serializers.DictField(child=serializers.CharField(), read_only=True)
    device_count = serializers.IntegerField(read_only=True)
    free_count = serializers.IntegerField(read_only=True)
    allocated_count = serializers.IntegerField(read_only=True)
    tainted_count = serializers.IntegerField(read_only=True)
    gpus = serializers.SerializerMethodField(help_text="Whole devices by model (no partitions).")

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
            "tainted_count",
            "gpus",
            "problems",
        ]

    @extend_schema_field(GpuModelSerializer(many=True))
    def get_gpus(self, node: Node) -> list[dict[str, Any]]:
        models = self.context.get("gpu_models", {}).get(node.name, [])
        return [{"model": model, "count": count} for model, count in models]


class DeviceSerializer(serializers.ModelSerializer):
    """A device and its state (kept by the mirror, see ``mirror.states``)."""

    url = serializers.HyperlinkedIdentityField(view_name="api:device-detail")
    resource_slice = serializers.SlugRelatedField(slug_field="name", read_only=True)
    state = serializers.CharField(read_only=True, help_text="free, allocated, shared or tainted")

    class Meta:
        model = Device
        fields = [
            "url",
            "id",
            "name",
            "driver",
            "pool_name",
            "resource_slice",
            "node_name",
            "device_type",
            "model_name",
            "uuid",
            "parent_uuid",
            "pci_bus_id",
            "pcie_root",
            "memory_bytes",
            "state",
            "is_tainted",
            "allow_multiple_allocations",
            "attributes",
            "capacity",
            "consumes_counters",
            "taints",
        ]


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
