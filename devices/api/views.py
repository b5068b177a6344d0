"""Read-only API of the cluster mirror: nodes, devices (and their streamed export), device
classes, resource slices.

Lists use the pages' FilterSets (STYLE §6) and the same per-row annotations, so a page of
the API costs a constant number of queries. The device list and export, read at 40,000
devices, render ``.values()`` rows (``DeviceRows``) rather than serializer instances, and page
by cursor (``KeysetPagination``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar, cast

from django.db.models import QuerySet
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import renderers, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from devices.filtersets import (
    DeviceClassFilterSet,
    DeviceFilterSet,
    NodeFilterSet,
    ResourceSliceFilterSet,
)
from devices.models import Device, DeviceClass, Node, ResourceSlice
from devices.telemetry.reads import History, device_utilisation, node_utilisation
from devices.views.devices import get_device
from dra.memory import without_cyclic_gc
from toolkit.api.pagination import KeysetPagination, keyset_chunks
from toolkit.api.renderers import FastJSONRenderer, json_lines
from toolkit.api.utilisation import (
    RANGE_PARAMETER,
    requested_range,
    utilisation_response,
    utilisation_schema,
)

from .device_rows import DeviceRows
from .serializers import (
    DeviceClassSerializer,
    DeviceSerializer,
    LatestReadingSerializer,
    NodeSerializer,
    ResourceSliceSerializer,
)

__all__ = [
    "DeviceClassViewSet",
    "DeviceUtilisationView",
    "DeviceViewSet",
    "NodeViewSet",
    "ResourceSliceViewSet",
]

_Row = TypeVar("_Row")

# Rows per query of the export: 5000 cost a quarter less than 2000 at 40,000 devices.
EXPORT_CHUNK = 5000
# Kubernetes object names may contain dots (DRF's default lookup pattern excludes them) and are
# at most 253 characters: a longer one names nothing, and is the router's 404.
NAME = r"[^/]{1,253}"


class JSONLinesRenderer(renderers.BaseRenderer):
    """Names the export's content type for negotiation and the schema; the view streams.

    Only error bodies are ever rendered through it (``DeviceViewSet.finalize_response``
    hands those to the JSON renderer); should one get here, it is one JSON line, never the
    bare keys of a dict."""

    media_type = "application/x-ndjson"
    format = "jsonl"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        return (json.dumps(data) + "\n").encode()


class NodeViewSet(viewsets.ReadOnlyModelViewSet):
    """Nodes with their published devices counted (free, allocated, tainted) and GPUs by model."""

    serializer_class = NodeSerializer
    filterset_class = NodeFilterSet
    lookup_field = "name"
    lookup_value_regex = NAME
    ordering_fields = ["name", "device_count", "free_count", "allocated_count"]

    def get_queryset(self) -> QuerySet[Node]:
        return Node.objects.with_device_counts()

    def paginate_queryset(
        self, queryset: QuerySet[Any, _Row] | Sequence[_Row]
    ) -> list[_Row] | None:
        page = super().paginate_queryset(queryset)
        # This view's rows are nodes (``get_queryset``).
        names = [node.name for node in cast("list[Node]", page or [])]
        self._gpu_models = Node.objects.filter(name__in=names).gpu_models() if names else {}
        return page

    def get_object(self) -> Node:
        node = super().get_object()
        self._gpu_models = Node.objects.filter(name=node.name).gpu_models()
        return node

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "gpu_models": getattr(self, "_gpu_models", {})}

    @extend_schema(
        summary="A node's GPU utilisation over a time range",
        description=(
            "The average over the node's devices per point, memory used as a percentage of "
            "their memory, their total power draw, and each device's latest reading. Empty "
            "series when nothing on the node was read in the range. A reading older than two "
            "minutes is listed as stale and no longer counts in `simulated` or `devices_read`."
        ),
        parameters=[RANGE_PARAMETER],
        responses=utilisation_schema(
            "NodeUtilisation",
            stale=serializers.BooleanField(help_text="No device read in the last two minutes."),
            devices_read=serializers.IntegerField(
                help_text="Devices read in the last two minutes."
            ),
            devices_stale=serializers.IntegerField(help_text="Devices whose reading is stale."),
            devices=LatestReadingSerializer(many=True),
        ),
    )
    @action(detail=True, methods=["get"], url_path="utilisation", pagination_class=None)
    def utilisation(self, request: Request, name: str) -> Response:
        # Only whether the node exists: not the list's device counts and GPU models.
        node = get_object_or_404(Node.objects.only("name"), name=name)
        span = requested_range(request)
        found = node_utilisation(node.name, span=span)
        history = found.history if found else History()
        return utilisation_response(
            span,
            {"gpu_util": history.util, "memory_used": history.memory, "power_w": history.power},
            simulated=bool(found and found.is_simulated),
            stale=bool(found and found.is_stale),
            devices_read=len(found.fresh) if found else 0,
            devices_stale=len(found.stale) if found else 0,
            devices=LatestReadingSerializer(found.rows if found else [], many=True).data,
        )


class DeviceViewSet(viewsets.ReadOnlyModelViewSet):
    """Every published device with its state and the claims holding it; ``export/`` streams
    them all as JSON Lines. One device is addressed as ``<driver>/<pool>/<device>`` (its
    stable identity: pool names may contain ``/``). Holders in a tenant you are not in are
    shown without their namespace or name.

    The list pages by ``?cursor=`` as well as ``?limit=&offset=``; its devices and the
    export's are ``DeviceSerializer``'s representation, rendered by ``DeviceRows``."""

    serializer_class = DeviceSerializer
    filterset_class = DeviceFilterSet
    pagination_class = KeysetPagination
    renderer_classes = [FastJSONRenderer, renderers.BrowsableAPIRenderer]
    ordering_fields = ["node_name", "driver", "name", "model_name", "memory_bytes"]
    lookup_url_kwarg = "key"
    # driver and device names have no "/"; the pool between them may.
    lookup_value_regex = r"[^/]{1,253}/.{1,253}/[^/]{1,253}"

    def get_queryset(self) -> QuerySet[Device]:
        return Device.objects.visible_to(self.request.user)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        rows = DeviceRows.select(self.filter_queryset(self.get_queryset()))
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(DeviceRows(request, request.user).render(page or []))

    def finalize_response(self, request, response, *args, **kwargs):
        """Errors of the export (bad filters, no credentials) are JSON like every API error."""
        renderer = getattr(request, "accepted_renderer", None)
        # No renderer: content negotiation itself failed (e.g. ``?format=nonsense``).
        if isinstance(response, Response) and (
            renderer is None or isinstance(renderer, JSONLinesRenderer)
        ):
            request.accepted_renderer = renderers.JSONRenderer()
            request.accepted_media_type = request.accepted_renderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)

    def get_object(self) -> Device:
        driver, _, rest = self.kwargs["key"].partition("/")
        pool, _, name = rest.rpartition("/")
        if not (driver and pool and name):
            raise Http404("Address a device as <driver>/<pool>/<device>.")
        return get_device(self.request.user, driver, pool, name)

    @extend_schema(
        summary="Export every device as JSON Lines",
        description=(
            "Streams one JSON object per line (the device representation of this API), for "
            "every device matching the same filters and ordering as the list, without "
            "pagination. Rows are read in chunks of 5000, each starting after the last row "
            "of the one before: memory grows with the chunk and the claims you may see, not "
            "with the devices."
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
        renderer_classes=[JSONLinesRenderer, FastJSONRenderer],
        pagination_class=None,
    )
    def export(self, request: Request) -> StreamingHttpResponse:
        # Filtered before streaming starts, so that bad filters answer a JSON 400.
        rows = DeviceRows.select(self.filter_queryset(self.get_queryset()))
        devices = DeviceRows(request, request.user, every_visible_claim=True, raw_json=True)

        def lines() -> Iterator[bytes]:
            # Two queries per chunk: its rows, and their holders (by a subquery of the chunk).
            # Each chunk builds ~100,000 short-lived objects: without the cyclic collector,
            # whose passes over a large process heap made one export in three twice as slow.
            # (Off while a chunk is rendered only, not while the client reads it.)
            for chunk, query in keyset_chunks(rows, EXPORT_CHUNK):
                with without_cyclic_gc():
                    body = json_lines(devices.render(chunk, device_ids=query.values("pk")))
                yield body

        response = StreamingHttpResponse(lines(), content_type="application/x-ndjson")
        response["Content-Disposition"] = 'attachment; filename="devices.jsonl"'
        return response


class DeviceClassViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = DeviceClassSerializer
    filterset_class = DeviceClassFilterSet
    lookup_field = "name"
    lookup_value_regex = NAME
    queryset = DeviceClass.objects.with_device_counts()


class ResourceSliceViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ResourceSliceSerializer
    filterset_class = ResourceSliceFilterSet
    lookup_field = "name"
    lookup_value_regex = NAME
    queryset = ResourceSlice.objects.all()


class DeviceUtilisationView(APIView):
    """A device's utilisation. Routed before the device router (``devices.api.urls.PATHS``):
    the device detail route's pool segment may hold ``/``, so it would swallow this suffix."""

    @extend_schema(
        summary="A device's GPU utilisation over a time range",
        description=(
            "GPU utilisation, memory used as a percentage of the device's memory and power "
            "draw over the range, and the latest reading (what the device's page shows)."
        ),
        parameters=[RANGE_PARAMETER],
        responses=utilisation_schema(
            "DeviceUtilisation",
            stale=serializers.BooleanField(help_text="The latest reading is stale."),
            latest=LatestReadingSerializer(allow_null=True),
        ),
    )
    def get(self, request: Request, driver: str, pool: str, device: str) -> Response:
        found_device = get_device(request.user, driver, pool, device)
        span = requested_range(request)
        found = device_utilisation(found_device, span=span)
        history = found.history if found else History()
        return utilisation_response(
            span,
            {"gpu_util": history.util, "memory_used": history.memory, "power_w": history.power},
            simulated=bool(found and found.reading.is_simulated),
            stale=bool(found and found.is_stale),
            latest=LatestReadingSerializer(found.latest).data if found else None,
        )
