"""Node pages: every node with its devices counted, and one node's slices and devices."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django_tables2 import RequestConfig

from devices.filtersets import NodeFilterSet
from devices.models import Device, Node, ResourceSlice, SharedCounterSet
from devices.tables import NodeTable, gpu_models_by_node, with_device_counts
from devices.views.devices import attribute_rows, capacity_rows, pretty_json
from portal.htmx import render_page

__all__ = ["node_detail", "node_list"]

PER_PAGE = 50


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


@login_required
def node_list(request: HttpRequest) -> HttpResponse:
    filterset = NodeFilterSet(request.GET, queryset=with_device_counts(Node.objects.all()))
    table = NodeTable(filterset.qs)
    RequestConfig(request, paginate={"per_page": PER_PAGE}).configure(table)
    table.gpu_models = gpu_models_by_node(row.record.name for row in table.page.object_list)
    orphans = _nodes_without_a_node_row()
    context = {
        "filterset": filterset,
        "table": table,
        "orphans": orphans,
        "is_filtered": any(filterset.form.data.get(name) for name in filterset.filters),
        "has_data": bool(table.paginator.count or orphans),
    }
    return render_page(request, "devices/node_list.html", "node-table", context)


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


@login_required
def node_detail(request: HttpRequest, name: str) -> HttpResponse:
    node = Node.objects.filter(name=name).first()
    slices = list(
        ResourceSlice.objects.filter(Q(node_name=name) | Q(devices__node_name=name))
        .distinct()
        .order_by("driver", "pool_name", "name")
    )
    if node is None and not slices:
        raise Http404("No such node.")
    devices = list((Device.objects.filter(node_name=name)).order_by("resource_slice__name", "pk"))
    pools = {(s.driver, s.pool_name) for s in slices}
    pool_filter = Q(pk__in=[])
    for driver, pool in pools:
        pool_filter |= Q(driver=driver, pool_name=pool)
    counter_sets = [
        {"set": cs, "counters": capacity_rows(cs.counters)}
        for cs in SharedCounterSet.objects.filter(pool_filter)
    ]
    node_info = ((node.raw.get("status") or {}).get("nodeInfo") or {}) if node else {}
    context = {
        "name": name,
        "node": node,
        "labels": sorted(node.labels.items()) if node else [],
        "conditions": _conditions(node),
        "node_info": node_info,
        "slices": _group_devices(slices, devices),
        "device_count": len(devices),
        "counter_sets": counter_sets,
        "raw_json": pretty_json(node.raw) if node else "",
    }
    return render(request, "devices/node_detail.html", context)
