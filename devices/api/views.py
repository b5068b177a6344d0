"""Read-only API of the cluster mirror: nodes, devices (and their streamed export), device
classes, resource slices.

Lists use the pages' FilterSets (STYLE §6) and the same per-row annotations, so a page of
the API costs a constant number of queries.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import renderers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request

from devices.filtersets import (
    DeviceClassFilterSet,
    DeviceFilterSet,
    NodeFilterSet,
    ResourceSliceFilterSet,
)
from devices.models import (
    Device,
    DeviceClass,
    DeviceClassMatch,
    Node,
    ResourceSlice,
)
from devices.tables import gpu_models_by_node, with_device_counts

from .serializers import (
    DeviceClassSerializer,
    DeviceSerializer,
    NodeSerializer,
    ResourceSliceSerializer,
)

__all__ = [
    "DeviceClassViewSet",
    "DeviceViewSet",
    "NodeViewSet",
    "ResourceSliceViewSet",
]

EXPORT_CHUNK = 2000
# Kubernetes object names may contain dots; DRF's default lookup pattern excludes them.
NAME = r"[^/]+"


class JSONLinesRenderer(renderers.BaseRenderer):
    """Names the export's content type for negotiation and the schema; the view streams."""

    media_type = "application/x-ndjson"
    format = "jsonl"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context=None):  # type: ignore[no-untyped-def]
        return data


class NodeViewSet(viewsets.ReadOnlyModelViewSet):
    """Nodes with their published devices counted (free, allocated, tainted) and GPUs by model."""

    serializer_class = NodeSerializer
    filterset_class = NodeFilterSet
    lookup_field = "name"
    lookup_value_regex = NAME
    ordering_fields = ["name", "device_count", "free_count", "allocated_count"]

    def get_queryset(self) -> QuerySet[Node]:
        return with_device_counts(Node.objects.all())

    def paginate_queryset(self, queryset: QuerySet[Node]) -> list[Node] | None:
        page = super().paginate_queryset(queryset)
        self._gpu_models = gpu_models_by_node(n.name for n in page) if page is not None else {}
        return page

    def get_object(self) -> Node:
        node = super().get_object()
        self._gpu_models = gpu_models_by_node([node.name])
        return node

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "gpu_models": getattr(self, "_gpu_models", {})}


class DeviceViewSet(viewsets.ReadOnlyModelViewSet):
    """Every published device with its state; ``export/`` streams them all as JSON Lines."""

    serializer_class = DeviceSerializer
    filterset_class = DeviceFilterSet
    ordering_fields = ["node_name", "driver", "name", "model_name", "memory_bytes"]

    def get_queryset(self) -> QuerySet[Device]:
        # The raw objects are large and not part of this representation.
        return (
            (Device.objects.visible_to(self.request.user))
            .select_related("resource_slice")
            .defer("raw", "resource_slice__raw")
        )

    @extend_schema(
        summary="Export every device as JSON Lines",
        description=(
            "Streams one JSON object per line (the device representation of this API), for "
            "every device matching the same filters as the list, without pagination. Memory "
            "use is constant: rows are read in chunks of 2000."
        ),
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(
                response=OpenApiTypes.STR, description="One device object per line."
            )
        },
    )
    @action(
        detail=False,
        methods=["get"],
        url_path="export",
        renderer_classes=[JSONLinesRenderer, renderers.JSONRenderer],
        pagination_class=None,
    )
    def export(self, request: Request) -> StreamingHttpResponse:
        queryset = self.filter_queryset(self.get_queryset())
        context = self.get_serializer_context()

        def lines() -> Iterator[str]:
            for device in queryset.iterator(chunk_size=EXPORT_CHUNK):
                yield json.dumps(DeviceSerializer(device, context=context).data) + "\n"

        response = StreamingHttpResponse(lines(), content_type="application/x-ndjson")
        response["Content-Disposition"] = 'attachment; filename="devices.jsonl"'
        return response


class DeviceClassViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = DeviceClassSerializer
    filterset_class = DeviceClassFilterSet
    lookup_field = "name"
    lookup_value_regex = NAME
    queryset = DeviceClass.objects.annotate(
        matching_device_count=Coalesce(
            Subquery(
                DeviceClassMatch.objects.filter(device_class_name=OuterRef("name"))
                .order_by()
                .values("device_class_name")
                .annotate(n=Count("pk"))
                .values("n")
            ),
            0,
        )
    )


class ResourceSliceViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ResourceSliceSerializer
    filterset_class = ResourceSliceFilterSet
    lookup_field = "name"
    lookup_value_regex = NAME
    queryset = ResourceSlice.objects.all()
