"""Device pages: the filterable inventory and one device with who holds it.

Inventory is visible to every signed-in user; *who* holds a device is not: a claim the user
may not see (``ResourceClaim.objects.visible_to``) is shown as "held by a claim in another
tenant", without its namespace or name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.db.models import Model, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.http import urlencode

from devices.filtersets import DeviceFilterSet
from devices.models import Device, DeviceClass, Pod, SharedCounterSet
from devices.tables import DeviceTable, human_bytes
from devices.telemetry.reads import device_utilisation
from dra.quantity import QuantityError, parse_quantity
from toolkit.charts import time_range
from toolkit.htmx import render_list, render_page, wants_fragment

__all__ = [
    "Holder",
    "attribute_rows",
    "capacity_rows",
    "device_detail",
    "device_list",
    "get_device",
    "holders_of",
    "pretty_json",
]

LIST_DEFERRED = ("raw", "attributes", "capacity", "consumes_counters", "taints")
FILTER_CHOICES_KEY = "devices:filter-choices"
FILTER_CHOICES_SECONDS = 30
NODE_SELECT_LIMIT = 100


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

    result: Model  # claims.AllocatedDevice, prefetched by ``Device.objects.with_holders``
    claim: Model | None  # claims.ResourceClaim; None: a claim in another tenant
    pods: list[Pod] = field(default_factory=list)


def holders_of(device: Device) -> tuple[list[Holder], list[Holder]]:
    """(holders, admin-access observers) of a device fetched ``with_holders(user)``; each
    visible claim with the pods it is reserved for (one query for every pod)."""
    # claims.AllocatedDevice rows, each with the ``visible_claim`` the prefetch set on it (a
    # type this app cannot name: it does not import the claims app above it).
    results: list[Any] = list(device.allocations.all())
    wanted = {
        (result.visible_claim.namespace, consumer.name)
        for result in results
        if result.visible_claim is not None
        for consumer in result.visible_claim.consumers.all()
    }
    pods: dict[tuple[str, str], Pod] = {}
    if wanted:
        for pod in Pod.objects.filter(
            namespace__in={ns for ns, _ in wanted}, name__in={name for _, name in wanted}
        ):
            pods[(pod.namespace, pod.name)] = pod
    holders: list[Holder] = []
    observers: list[Holder] = []
    for result in results:
        claim = result.visible_claim
        holder = Holder(result, claim)
        if claim is not None:
            holder.pods = [
                pods.get((claim.namespace, c.name)) or Pod(namespace=claim.namespace, name=c.name)
                for c in claim.consumers.all()
            ]
        (observers if result.admin_access else holders).append(holder)
    return holders, observers


@login_required
def device_list(request: HttpRequest) -> HttpResponse:
    # The table shows scalar columns only; the JSON columns are large.
    queryset = Device.objects.visible_to(request.user).defer(*LIST_DEFERRED)
    filterset = DeviceFilterSet(request.GET, queryset=queryset)
    active = {
        name: value
        for name, value in request.GET.items()
        if name in filterset.filters and isinstance(value, str) and value
    }
    return render_list(
        request,
        filterset=filterset,
        table_class=DeviceTable,
        template="devices/device_list.html",
        fragment="device-table",
        context={"export_query": urlencode(active)},
        filter_choices=_filter_choices,
    )


def _filter_choices() -> dict[str, Any]:
    """Values offered by the filter form's selects (``offer_choices``); cached briefly, as
    scanning every device for its distinct drivers, models and nodes on each page view would
    dominate the page."""
    values = cast(
        "dict[str, Any]",
        cache.get_or_set(FILTER_CHOICES_KEY, _compute_filter_choices, FILTER_CHOICES_SECONDS),
    )
    return {
        "node": ("All nodes", values["nodes"]),
        "driver": ("All drivers", values["drivers"]),
        "model": ("All models", values["models"]),
        "device_class": ("All device classes", values["device_classes"]),
    }


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


def get_device(user: Any, driver: str, pool: str, name: str) -> Device:
    """The device ``name`` of ``driver``'s ``pool`` (its stable identity), with its holders
    prefetched as ``user`` may see them; ``Http404`` if none is published."""
    device = (
        Device.objects.visible_to(user)
        .by_natural_key(driver, pool, name)
        .select_related("resource_slice")
        .with_holders(user)
        .first()
    )
    if device is None:
        raise Http404("No such device.")
    return device


@login_required
def device_detail(request: HttpRequest, driver: str, pool: str, device: str) -> HttpResponse:
    found = get_device(request.user, driver, pool, device)
    holders, admin_holders = holders_of(found)
    context: dict[str, Any] = {
        "device": found,
        "holders": holders,
        "admin_holders": admin_holders,
        "utilisation": device_utilisation(found, span=time_range(request.GET.get("range"))),
    }
    if wants_fragment(request):
        # The live part only: state, reason and holders (polled every few seconds).
        return render_page(request, "devices/device_detail.html", "device-status", context)
    partitions: QuerySet[Device] | list[Device] = []
    if found.uuid:
        partitions = Device.objects.filter(parent_uuid=found.uuid)
    parent = Device.objects.filter(uuid=found.parent_uuid).first() if found.parent_uuid else None
    consumes = [
        {
            "counter_set": entry.get("counterSet", ""),
            "counters": capacity_rows(entry.get("counters") or {}),
        }
        for entry in found.consumes_counters
        if isinstance(entry, dict)
    ]
    context |= {
        "attributes": attribute_rows(found.attributes),
        "capacity": capacity_rows(found.capacity),
        "consumes": consumes,
        "counter_sets": [
            {"set": cs, "counters": capacity_rows(cs.counters)} for cs in _counter_sets(found)
        ],
        "partitions": partitions,
        "parent": parent,
        "device_classes": DeviceClass.objects.filter(
            name__in=found.class_matches.values("device_class_name")
        ),
        "raw_json": pretty_json(found.raw),
    }
    return render_page(request, "devices/device_detail.html", "device-status", context)
