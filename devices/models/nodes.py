"""Node (core/v1): labels and the extended resources of legacy device plugins."""

from __future__ import annotations

from collections import defaultdict

from django.db import models
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.urls import reverse

from devices.models.devices import Device, DeviceState
from devices.models.mirror import MirroredObject

__all__ = ["DEVICE_PLUGIN_GPUS", "Node", "NodeQuerySet"]

# Extended resources of GPU device plugins → the node label naming the product (set by GPU
# feature discovery), e.g. ``nvidia.com/gpu: 4`` with ``nvidia.com/gpu.product: Tesla-T4``.
DEVICE_PLUGIN_GPUS = {
    "nvidia.com/gpu": "nvidia.com/gpu.product",
    "amd.com/gpu": "amd.com/gpu.product-name",
}


def _count_per_node(devices: models.QuerySet[Device]) -> Coalesce:
    counted = (
        devices.filter(node_name=OuterRef("name"))
        .order_by()
        .values("node_name")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted), 0)


class NodeQuerySet(models.QuerySet["Node"]):
    def with_device_counts(self) -> NodeQuerySet:
        """Annotates ``device_count`` and ``<state>_count`` for every device state, from the
        ``state`` column of the devices published for each node (``Device.objects.in_state``,
        the definition the dashboard counts with too)."""
        return self.annotate(
            device_count=_count_per_node(Device.objects.all()),
            **{
                f"{state.value}_count": _count_per_node(Device.objects.in_state(state))
                for state in DeviceState
            },
        )

    def device_plugin_gpus(self) -> dict[str, list[tuple[str, int]]]:
        """node → [(model, count)] of the GPUs device plugins advertise as extended
        resources (GPUs DRA does not manage, e.g. legacy T4 nodes), in one query."""
        found: dict[str, list[tuple[str, int]]] = {}
        # Only nodes advertising such a resource: reading every node's raw JSON (for its
        # labels) cost ~0.6 s at 5,000 nodes, almost none of which run a device plugin.
        advertises = Q()
        for resource in DEVICE_PLUGIN_GPUS:
            advertises |= Q(extended_resources__has_key=resource)
        for node in self.filter(advertises).only("name", "extended_resources", "raw"):
            if node.device_plugin_gpus:
                found[node.name] = node.device_plugin_gpus
        return found

    def gpu_models(self) -> dict[str, list[tuple[str, int]]]:
        """node → [(model, count)] of whole GPUs: the DRA devices published for the node
        (partitions left out) and the GPUs device plugins advertise. Two queries."""
        models_by_node: dict[str, list[tuple[str, int]]] = defaultdict(list)
        rows = (
            Device.objects.filter(node_name__in=self.values("name"))
            .whole()
            .exclude(model_name="")
            .order_by()
            .values("node_name", "model_name")
            .annotate(n=Count("pk"))
            .order_by("node_name", "model_name")
        )
        for row in rows:
            models_by_node[row["node_name"]].append((row["model_name"], row["n"]))
        for name, gpus in self.device_plugin_gpus().items():
            models_by_node[name].extend(gpus)
        return dict(models_by_node)


class Node(MirroredObject):
    is_ready = models.BooleanField(default=False)
    is_schedulable = models.BooleanField(default=True)
    # Extended resources advertised by device plugins, e.g. {"nvidia.com/gpu": "8"}, so that
    # GPUs not managed through DRA are shown beside the DRA ones.
    extended_resources = models.JSONField(default=dict, blank=True)

    objects = NodeQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("node-detail", kwargs={"name": self.name})

    @property
    def device_plugin_gpus(self) -> list[tuple[str, int]]:
        """[(model, count)] of the GPUs device plugins advertise on this node: the product
        label with dashes read as spaces ("Tesla-T4" → "Tesla T4"), else the resource name."""
        gpus = []
        for resource, label in DEVICE_PLUGIN_GPUS.items():
            try:
                count = int(str((self.extended_resources or {}).get(resource, 0)))
            except ValueError:
                continue
            if count > 0:
                product = self.labels.get(label, "").replace("-", " ").strip()
                gpus.append((product or resource, count))
        return gpus
