"""Device class pages: every class, and one class's selectors and config.

"Matching devices" are those every selector of the class accepts, as the allocator's CEL
evaluates them (``mirror.classes``), free or not.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django_tables2 import RequestConfig

from devices.filtersets import DeviceClassFilterSet, drivers_named_by
from devices.models import Device, DeviceClass, DeviceClassMatch
from devices.tables import DeviceClassTable
from devices.views.devices import pretty_json
from mirror.classes import class_selector_errors
from portal.htmx import render_page

__all__ = ["deviceclass_detail", "deviceclass_list", "devices_per_class"]


def devices_per_class() -> dict[str, int]:
    """class name → number of matching devices, in one query."""
    rows = DeviceClassMatch.objects.order_by().values("device_class_name").annotate(n=Count("pk"))
    return {row["device_class_name"]: row["n"] for row in rows}


@login_required
def deviceclass_list(request: HttpRequest) -> HttpResponse:
    filterset = DeviceClassFilterSet(request.GET, queryset=DeviceClass.objects.all())
    table = DeviceClassTable(filterset.qs)
    RequestConfig(request, paginate={"per_page": 50}).configure(table)
    table.device_counts = devices_per_class()
    context = {
        "filterset": filterset,
        "table": table,
        "is_filtered": bool(filterset.form.data.get("q")),
        "has_data": bool(table.paginator.count) or DeviceClass.objects.exists(),
    }
    return render_page(request, "devices/deviceclass_list.html", "deviceclass-table", context)


@login_required
def deviceclass_detail(request: HttpRequest, name: str) -> HttpResponse:
    device_class = get_object_or_404(DeviceClass, name=name)
    matches = Device.objects.filter(class_matches__device_class_name=device_class.name)
    context = {
        "device_class": device_class,
        "expressions": device_class.cel_expressions,
        "selector_errors": class_selector_errors(device_class),
        "drivers": sorted(drivers_named_by(device_class)),
        "device_count": matches.count(),
        "free_count": matches.free().count(),
        "config_json": pretty_json(device_class.config) if device_class.config else "",
        "raw_json": pretty_json(device_class.raw),
    }
    return render(request, "devices/deviceclass_detail.html", context)
