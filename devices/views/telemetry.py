"""The Telemetry page: each source of GPU readings and how its last cycles went (portal
admins: sources name internal endpoints)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from devices.models import Device, DeviceTelemetry, TelemetrySource
from devices.telemetry.reads import STALE_AFTER
from toolkit.htmx import render_page

__all__ = ["telemetry_sources"]


@login_required
def telemetry_sources(request: HttpRequest) -> HttpResponse:
    if not request.user.is_staff:
        raise PermissionDenied("Telemetry sources are for portal admins.")
    now = timezone.now()
    sources = list(TelemetrySource.objects.all())
    for source in sources:
        source.stale = source.enabled and source.is_stale(now)
    readings = DeviceTelemetry.objects.all()
    # What a GPU node reports on: its whole GPUs, and the MIG placements claims hold (the
    # others are not instances on the GPU).
    on_nodes = Device.objects.exclude(node_name="")
    gpus = (
        on_nodes.exclude(uuid="").filter(parent_uuid="") | on_nodes.exclude(parent_uuid="").held()
    )
    fresh = readings.filter(sampled_at__gte=now - STALE_AFTER)
    context = {
        "sources": sources,
        "stale_sources": [s for s in sources if s.stale],
        "gpu_count": gpus.count(),
        "fresh_count": fresh.count(),
        "reading_count": readings.count(),
        # Of the current readings: what a switched-off simulation left behind ages out.
        "simulated": fresh.filter(is_simulated=True).exists(),
    }
    return render_page(request, "devices/telemetrysource_list.html", "telemetry-sources", context)
