"""Device pages: the filterable inventory and one device with who holds it.

Inventory is visible to every signed-in user; *who* holds a device is not: a claim the user
may not see (``ResourceClaim.objects.visible_to``) is shown as "held by a claim in another
tenant", without its namespace or name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django_tables2 import RequestConfig

from claims.models import AllocatedDevice, ResourceClaim
from devices.filtersets import DeviceFilterSet
from devices.models import Device, DeviceClass, DeviceState, Pod, SharedCounterSet
from devices.tables import DeviceTable, human_bytes
from dra.quantity import QuantityError, parse_quantity
from portal.htmx import render_page, wants_fragment

__all__ = [
    "attribute_rows",
    "capacity_rows",
    "device_detail",
    "device_list",
    "pretty_json",
]

LIST_DEFERRED = ("raw", "attributes", "capacity", "consumes_counters", "taints")
FILTER_CHOICES_KEY = "devices:filter-choices"
FILTER_CHOICES_SECONDS = 30
NODE_SELECT_LIMIT = 100

PER_PAGE = 50


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True)


def attribute_rows(attributes: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(name, type, value) of each published attribute, sorted by name."""
    rows = []
    for name, entry in sorted(attributes.items()):
        if isinstance(entry, dict) and entry:
            kind, value = next(iter(entry.items()))
            rows.append((name, str(kind), str(value)))
        else:
            rows.append((name, "", json.dumps(entry)))
    return rows


def _human_quantity(name: str, value: str) -> str:
    """Bytes humanised for memory-like quantities; blank when it would say nothing new."""
    if not name.lower().endswith("memory"):  # not counters such as memory-slice-0
        return ""
    try:
        size = parse_quantity(value).ceil_int()
    except (QuantityError, ValueError, TypeError):
        return ""
    human = human_bytes(size)
    return "" if human.replace(" ", "") == value.replace(" ", "") else human


def capacity_rows(capacity: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(name, quantity as published, humanised bytes or "") of each capacity or counter."""
    rows = []
    for name, entry in sorted(capacity.items()):
        value = str(entry.get("value", "")) if isinstance(entry, dict) else str(entry)
        rows.append((name, value, _human_quantity(name, value)))
    return rows


@dataclass
class Holder:
    """One allocation result naming the device, as far as the user may know it."""

    result: AllocatedDevice
    claim: ResourceClaim | None  # None: a claim in another tenant
    pods: list[Pod] = field(default_factory=list)


def _holders(user: Any, device: Device) -> tuple[list[Holder], list[Holder]]:
    """(holders, admin-access holders) of the device."""
    results = list(
        AllocatedDevice.objects.filter(device=device)
        .select_related("claim")
        .prefetch_related("claim__consumers")
    )
    visible = set(
        ResourceClaim.objects.visible_to(user)
        .filter(pk__in=[r.claim_id for r in results])
        .values_list("pk", flat=True)
    )
    consumers = {
        (r.claim.namespace, c.name): c
        for r in results
        if r.claim_id in visible
        for c in r.claim.consumers.all()
    }
    pods: dict[tuple[str, str], Pod] = {}
    if consumers:
        namespaces = {ns for ns, _ in consumers}
        for pod in Pod.objects.filter(namespace__in=namespaces, name__in=[n for _, n in consumers]):
            pods[(pod.namespace, pod.name)] = pod
    holders: list[Holder] = []
    admins: list[Holder] = []
    for result in results:
        if result.claim_id in visible:
            claim = result.claim
            holder = Holder(
                result,
                claim,
                [
                    pods.get((claim.namespace, c.name))
                    or Pod(namespace=claim.namespace, name=c.name)
                    for c in claim.consumers.all()
                ],
            )
        else:
            holder = Holder(result, None)
        (admins if result.admin_access else holders).append(holder)
    return holders, admins


@login_required
def device_list(request: HttpRequest) -> HttpResponse:
    # The table shows scalar columns only; the JSON columns are large.
    queryset = (Device.objects.visible_to(request.user)).defer(*LIST_DEFERRED)
    filterset = DeviceFilterSet(request.GET, queryset=queryset)
    table = DeviceTable(filterset.qs)
    RequestConfig(request, paginate={"per_page": PER_PAGE}).configure(table)
    context = {
        "filterset": filterset,
        "table": table,
        "is_filtered": any(filterset.form.data.get(name) for name in filterset.filters),
        "has_data": bool(table.paginator.count) or Device.objects.exists(),
    }
    if not wants_fragment(request):
        context.update(_filter_choices())
    return render_page(request, "devices/device_list.html", "device-table", context)


def _filter_choices() -> dict[str, Any]:
    """Values offered by the filter form's selects; cached briefly, as scanning every device
    for its distinct drivers, models and nodes on each page view would dominate the page."""
    return cache.get_or_set(FILTER_CHOICES_KEY, _compute_filter_choices, FILTER_CHOICES_SECONDS)


def _compute_filter_choices() -> dict[str, Any]:
    distinct = Device.objects.order_by()
    nodes = list(
        distinct.exclude(node_name="")
        .values_list("node_name", flat=True)
        .distinct()
        .order_by("node_name")[: NODE_SELECT_LIMIT + 1]
    )
    return {
        "drivers": list(distinct.values_list("driver", flat=True).distinct().order_by("driver")),
        "models": list(
            distinct.exclude(model_name="")
            .values_list("model_name", flat=True)
            .distinct()
            .order_by("model_name")
        ),
        # A select of thousands of nodes is unusable and slow to render: a text field then.
        "nodes": nodes if len(nodes) <= NODE_SELECT_LIMIT else None,
        "device_classes": list(DeviceClass.objects.values_list("name", flat=True)),
        "states": DeviceState.choices,
    }


def _counter_sets(device: Device) -> list[SharedCounterSet]:
    names = [
        entry.get("counterSet") for entry in device.consumes_counters if isinstance(entry, dict)
    ]
    if not names:
        return []
    return list(
        SharedCounterSet.objects.filter(
            driver=device.driver, pool_name=device.pool_name, name__in=names
        )
    )


@login_required
def device_detail(request: HttpRequest, pk: int) -> HttpResponse:
    device: Device = get_object_or_404(
        (Device.objects.visible_to(request.user)).select_related("resource_slice"),
        pk=pk,
    )
    holders, admin_holders = _holders(request.user, device)
    partitions: QuerySet[Device] | list[Device] = []
    if device.uuid:
        partitions = Device.objects.filter(parent_uuid=device.uuid)
    parent = Device.objects.filter(uuid=device.parent_uuid).first() if device.parent_uuid else None
    device_classes = DeviceClass.objects.filter(
        name__in=device.class_matches.values("device_class_name")
    )
    consumes = [
        {
            "counter_set": entry.get("counterSet", ""),
            "counters": capacity_rows(entry.get("counters") or {}),
        }
        for entry in device.consumes_counters
        if isinstance(entry, dict)
    ]
    context = {
        "device": device,
        "attributes": attribute_rows(device.attributes),
        "capacity": capacity_rows(device.capacity),
        "consumes": consumes,
        "counter_sets": [
            {"set": cs, "counters": capacity_rows(cs.counters)} for cs in _counter_sets(device)
        ],
        "holders": holders,
        "admin_holders": admin_holders,
        "partitions": partitions,
        "parent": parent,
        "device_classes": device_classes,
        "raw_json": pretty_json(device.raw),
    }
    return render(request, "devices/device_detail.html", context)
