"""Device class pages: every class, and one class's selectors and config.

"Matching devices" are those every selector of the class accepts, as the allocator's CEL
evaluates them (``mirror.classes``), free or not.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from devices.filtersets import DeviceClassFilterSet, drivers_named_by
from devices.models import DeviceClass
from devices.tables import DeviceClassTable
from devices.views.devices import pretty_json
from dra.cel import selector_errors as cel_selector_errors
from dra.model import selector_expressions
from toolkit.htmx import render_list

__all__ = ["deviceclass_detail", "deviceclass_list", "selector_errors"]


def selector_errors(device_class: DeviceClass) -> list[str]:
    """Why selectors of the class cannot be evaluated ("Selector 1: ..."): then the class
    matches no device. Compiled by the DRA core, as the mirror does when it matches devices."""
    selectors = device_class.selectors if isinstance(device_class.selectors, list) else [None]
    return cel_selector_errors(selector_expressions(selectors))


@login_required
def deviceclass_list(request: HttpRequest) -> HttpResponse:
    return render_list(
        request,
        filterset=DeviceClassFilterSet(
            request.GET, queryset=DeviceClass.objects.with_device_counts()
        ),
        table_class=DeviceClassTable,
        template="devices/deviceclass_list.html",
        fragment="deviceclass-table",
    )


@login_required
def deviceclass_detail(request: HttpRequest, name: str) -> HttpResponse:
    device_class = get_object_or_404(DeviceClass.objects.with_device_counts(), name=name)
    context = {
        "device_class": device_class,
        "expressions": device_class.cel_expressions,
        "selector_errors": selector_errors(device_class),
        "drivers": sorted(drivers_named_by(device_class)),
        "device_count": device_class.matching_device_count,
        "free_count": device_class.free_device_count,
        "config_json": pretty_json(device_class.config) if device_class.config else "",
        "raw_json": pretty_json(device_class.raw),
    }
    return render(request, "devices/deviceclass_detail.html", context)
