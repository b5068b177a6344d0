"""Device class pages: every class, and one class's selectors and config.

"Devices" here counts the devices of the driver(s) a class's selectors name
(``devices.filtersets.drivers_named_by``), not the devices its CEL selectors match: that needs
the allocator's CEL evaluation per device, which is not wired into the mirror yet.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django_tables2 import RequestConfig

from devices.filtersets import DeviceClassFilterSet, drivers_named_by
from devices.models import Device, DeviceClass
from devices.tables import DeviceClassTable
from devices.views.devices import pretty_json
from portal.htmx import render_page

__all__ = ["deviceclass_detail", "deviceclass_list", "devices_per_driver"]


def devices_per_driver() -> dict[str, int]:
    """driver → number of published devices, in one query."""
    rows = Device.objects.order_by().values("driver").annotate(n=Count("pk"))
    return {row["driver"]: row["n"] for row in rows}


@login_required
def deviceclass_list(request: HttpRequest) -> HttpResponse:
    filterset = DeviceClassFilterSet(request.GET, queryset=DeviceClass.objects.all())
    table = DeviceClassTable(filterset.qs)
    RequestConfig(request, paginate={"per_page": 50}).configure(table)
    table.device_counts = devices_per_driver()
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
    counts = devices_per_driver()
    drivers = sorted(drivers_named_by(device_class))
    context = {
        "device_class": device_class,
        "expressions": device_class.cel_expressions,
        "drivers": [(driver, counts.get(driver, 0)) for driver in drivers],
        "device_count": sum(counts.get(driver, 0) for driver in drivers),
        "config_json": pretty_json(device_class.config) if device_class.config else "",
        "raw_json": pretty_json(device_class.raw),
    }
    return render(request, "devices/deviceclass_detail.html", context)
