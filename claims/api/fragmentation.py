"""``GET /api/v1/fragmentation/`` and ``GET /api/v1/fragmentation/nodes/<name>/``: the
fragmentation advisor's answers (``claims.capacity.fragmentation``) as JSON, the same as the pages.
Inventory, not tenant data: any authenticated user may read them, as the nodes and devices."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claims.capacity.fragmentation import ShapeKind, ShapeSummary
from claims.capacity.fragmentation_reads import cluster_advice, is_known_node, node_advice

__all__ = ["FragmentationNodeView", "FragmentationView"]


class ShapeSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="<device class>:<MIG profile or device count>.")
    device_class = serializers.CharField()
    kind = serializers.ChoiceField(choices=[kind.value for kind in ShapeKind])
    # A declared field (the serializer's metaclass takes it off the class), not Field.label.
    label = serializers.CharField(  # type: ignore[assignment]
        help_text="E.g. 1g.5gb, or 4 GPUs."
    )
    count = serializers.IntegerField(help_text="Devices in one claim.")
    profile = serializers.CharField(help_text="The MIG profile (partitions only).")
    match_attribute = serializers.CharField(
        allow_null=True, help_text="The NVLink clique attribute several devices must share."
    )
    spec = serializers.DictField(help_text="The ResourceClaim spec the allocator was asked for.")


class ShapeFitSerializer(serializers.Serializer):
    shape = ShapeSerializer()
    fits = serializers.IntegerField(help_text="How many claims of the shape fit at once.")
    capped = serializers.BooleanField(help_text="The count stopped at its limit: maybe more fit.")
    allocatable = serializers.BooleanField(source="is_allocatable")
    gpus = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Partitions: per GPU, how many of them it takes.",
    )
    first = serializers.ListField(
        child=serializers.CharField(), help_text="The devices the first claim would get."
    )
    error = serializers.CharField(allow_null=True)


class ClassAdviceSerializer(serializers.Serializer):
    device_class = serializers.CharField()
    kind = serializers.ChoiceField(choices=[kind.value for kind in ShapeKind])
    devices = serializers.IntegerField(help_text="GPUs of the class on the node.")
    clique_attribute = serializers.CharField(allow_null=True)
    largest = serializers.IntegerField(
        help_text="Whole devices: the most one claim can get (on one clique when published)."
    )
    sentence = serializers.CharField()
    fits = ShapeFitSerializer(many=True)


class NodeAdviceSerializer(serializers.Serializer):
    node = serializers.CharField()
    sentences = serializers.ListField(child=serializers.CharField())
    classes = ClassAdviceSerializer(many=True)
    allocations = serializers.IntegerField(help_text="Allocator calls the answer took.")
    milliseconds = serializers.FloatField(help_text="Time the answer took when computed.")


class NodeFitsSerializer(serializers.Serializer):
    node = serializers.CharField()
    fits = serializers.IntegerField()


class ShapeSummarySerializer(serializers.Serializer):
    shape = ShapeSerializer()
    nodes = serializers.SerializerMethodField(help_text="Where it fits, and how many times.")
    published_on = serializers.IntegerField(help_text="Nodes publishing devices for it.")
    fits = serializers.IntegerField(help_text="How many fit at once, all nodes together.")
    gpus = serializers.IntegerField(help_text="Partitions: GPUs with room for one.")
    capped = serializers.BooleanField()
    sentence = serializers.CharField()

    @extend_schema_field(NodeFitsSerializer(many=True))
    def get_nodes(self, summary: ShapeSummary) -> list[dict[str, Any]]:
        return [{"node": node, "fits": fits} for node, fits in summary.nodes]


class LargestBlockSerializer(serializers.Serializer):
    device_class = serializers.CharField()
    clique_attribute = serializers.CharField(allow_null=True)
    count = serializers.IntegerField(help_text="The most devices one claim can get.")
    nodes = serializers.ListField(child=serializers.CharField(), help_text="Where.")
    sentence = serializers.CharField()


class ClusterAdviceSerializer(serializers.Serializer):
    sentences = serializers.ListField(child=serializers.CharField())
    largest = LargestBlockSerializer(many=True)
    shapes = ShapeSummarySerializer(many=True)
    nodes = NodeAdviceSerializer(many=True)
    allocations = serializers.IntegerField(help_text="Allocator calls the answer took.")
    milliseconds = serializers.FloatField(help_text="Time the answer took when computed.")
    version = serializers.IntegerField(
        allow_null=True, help_text="The allocation index's version it was computed at."
    )
    complete = serializers.BooleanField(source="is_complete")
    pending = serializers.ListField(
        child=serializers.CharField(),
        help_text="Nodes not answered yet (the time budget ran out): ask again.",
    )


class FragmentationView(APIView):
    """Which MIG profiles and whole-GPU shapes still fit, per node and cluster-wide: each
    shape allocated on each node by the portal's allocator against current usage, repeatedly
    until it no longer fits."""

    @extend_schema(
        summary="What still fits where (fragmentation advisor)",
        responses=ClusterAdviceSerializer,
    )
    def get(self, request: Request) -> Response:
        return Response(ClusterAdviceSerializer(cluster_advice()).data)


class FragmentationNodeView(APIView):
    """The fragmentation advisor's answer for one node."""

    @extend_schema(summary="What still fits on one node", responses=NodeAdviceSerializer)
    def get(self, request: Request, name: str) -> Response:
        if not is_known_node(name):
            raise Http404("No such node.")
        return Response(NodeAdviceSerializer(node_advice(name)).data)
