"""Node pages: every node with its devices counted, and one node's slices and devices."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django_tables2 import Table

from devices.filtersets import NodeFilterSet
from devices.models import Device, DeviceState, Node, ResourceSlice, SharedCounterSet
from devices.tables import NodeTable
from devices.telemetry.reads import node_utilisation
from devices.views.devices import attribute_rows, capacity_rows, pretty_json
from toolkit.charts import time_range
from toolkit.htmx import render_list, render_page, wants_fragment

__all__ = ["node_detail", "node_list"]


def _nodes_without_a_node_row() -> list[str]:
    """Node names devices are published for but that have no Node row (not mirrored yet, or
    deleted while their driver still publishes)."""
    return list(
        Device.objects.exclude(node_name="")
        .exclude(node_name__in=Node.objects.values("name"))
        .order_by("node_name")
        .values_list("node_name", flat=True)
        .distinct()
    )


def _gpus_of_the_page(table: Table) -> dict[str, Any]:
    names = [row.record.name for row in table.page.object_list]
    table.gpu_models = Node.objects.filter(name__in=names).gpu_models()
    return {}


@login_required
def node_list(request: HttpRequest) -> HttpResponse:
    orphans = _nodes_without_a_node_row()
    return render_list(
        request,
        filterset=NodeFilterSet(request.GET, queryset=Node.objects.with_device_counts()),
        table_class=NodeTable,
        template="devices/node_list.html",
        fragment="node-table",
        context={"orphans": orphans},
        page_context=_gpus_of_the_page,
    )


@dataclass
class DeviceGroup:
    """A top-level device and the partitions carved from it (MIG devices of a GPU)."""

    device: Device
    attributes: list[tuple[str, str, str]]
    capacity: list[tuple[str, str, str]]
    partitions: list[Device] = field(default_factory=list)


@dataclass
class SliceGroup:
    resource_slice: ResourceSlice
    groups: list[DeviceGroup] = field(default_factory=list)


def _group_devices(slices: list[ResourceSlice], devices: list[Device]) -> list[SliceGroup]:
    """Devices by slice, with each partition inside its parent (``parent_uuid`` → ``uuid``).

    A partition whose parent is not published on this node stays a top-level device.
    """
    parents = {d.uuid: d for d in devices if d.uuid and not d.parent_uuid}
    by_slice = {s.pk: SliceGroup(s) for s in slices}
    groups: dict[int, DeviceGroup] = {}
    for device in devices:
        if device.parent_uuid and device.parent_uuid in parents:
            continue
        group = DeviceGroup(
            device, attribute_rows(device.attributes), capacity_rows(device.capacity)
        )
        groups[device.pk] = group
        by_slice[device.resource_slice_id].groups.append(group)
    for device in devices:
        if device.parent_uuid and device.parent_uuid in parents:
            groups[parents[device.parent_uuid].pk].partitions.append(device)
    return list(by_slice.values())


def _conditions(node: Node | None) -> list[dict[str, Any]]:
    if node is None:
        return []
    conditions = (node.raw.get("status") or {}).get("conditions") or []
    return [c for c in conditions if isinstance(c, dict)]


def _state_counts(devices: list[Device]) -> list[tuple[str, str, int]]:
    """(state, label, count) of the states the node's devices are in."""
    counts = Counter(device.state for device in devices)
    return [(s.value, s.label, counts[s.value]) for s in DeviceState if counts[s.value]]


@login_required
def node_detail(request: HttpRequest, name: str) -> HttpResponse:
    node = Node.objects.filter(name=name).first()
    # The node's own slices and those offering it devices (a pool spanning nodes). As an id
    # subquery, not a join with DISTINCT: that read every slice (~110 ms at 5,000 nodes).
    on_node = Device.objects.filter(node_name=name).values("resource_slice_id")
    slices = list(
        ResourceSlice.objects.filter(Q(node_name=name) | Q(pk__in=on_node)).order_by(
            "driver", "pool_name", "name"
        )
    )
    if node is None and not slices:
        raise Http404("No such node.")
    # Not the raw JSON: the page shows the attributes and capacity kept apart from it.
    devices = list(Device.objects.on_node(name).defer("raw").order_by("resource_slice__name", "pk"))
    context: dict[str, Any] = {
        "name": name,
        "node": node,
        "slices": _group_devices(slices, devices),
        "device_count": len(devices),
        "state_counts": _state_counts(devices),
        "gpus": node.device_plugin_gpus if node else [],
    }
    if wants_fragment(request):
        # The live part only: the slices and their devices' states (polled).
        return render_page(request, "devices/node_detail.html", "node-devices", context)
    pool_filter = Q(pk__in=[])
    for driver, pool in {(s.driver, s.pool_name) for s in slices}:
        pool_filter |= Q(driver=driver, pool_name=pool)
    node_info = ((node.raw.get("status") or {}).get("nodeInfo") or {}) if node else {}
    context |= {
        "labels": sorted(node.labels.items()) if node else [],
        "conditions": _conditions(node),
        "node_info": node_info,
        "counter_sets": [
            {"set": cs, "counters": capacity_rows(cs.counters)}
            for cs in SharedCounterSet.objects.filter(pool_filter)
        ],
        "raw_json": pretty_json(node.raw) if node else "",
        "utilisation": node_utilisation(name, span=time_range(request.GET.get("range"))),
    }
    return render_page(request, "devices/node_detail.html", "node-devices", context)
