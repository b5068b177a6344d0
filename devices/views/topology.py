"""A node's topology page: its GPUs drawn by NUMA node, PCIe root and NVLink clique."""

from __future__ import annotations

from typing import Any, cast

from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone

from devices.models import (
    Device,
    DeviceState,
    DeviceTelemetry,
    NamespacedQuerySet,
    Node,
    SharedCounterSet,
)
from devices.telemetry.reads import is_stale, shows_simulated
from devices.topology import Holders, Reading, node_topology
from devices.topology_drawing import draw
from devices.topology_svg import render_svg
from toolkit.htmx import render_page

__all__ = ["node_topology_page"]

# The columns the drawing reads; ``raw`` (the whole published object) is large.
_DEFERRED = ("raw", "taints", "capacity")


def _readings(name: str) -> tuple[dict[tuple[str, str, str], Reading], bool]:
    """The latest reading of each device on the node (one query), and whether what they show
    now is simulated (``shows_simulated``: stale readings age out of it)."""
    now = timezone.now()
    rows = list(
        DeviceTelemetry.objects.on_node(name).only(
            "driver",
            "pool_name",
            "device_name",
            "sampled_at",
            "gpu_util",
            "fb_used_mib",
            "fb_total_mib",
            "is_simulated",
        )
    )
    readings: dict[tuple[str, str, str], Reading] = {}
    for row in rows:
        fraction = row.fb_used_fraction
        readings[row.natural_key] = Reading(
            gpu_util=row.gpu_util,
            memory_percent=None if fraction is None else round(fraction * 100, 1),
            is_stale=is_stale(row, now),
            is_simulated=row.is_simulated,
        )
    return readings, shows_simulated(rows, now)


def _holders(name: str, user: Any) -> dict[int, Holders]:
    """Who holds each device on the node (two queries: the results, then the claims among
    them ``user`` may see, through the claims' own ``visible_to``). The claim models are
    reached through the relation, as this app does not import the claims app above it."""
    results = Device.allocations.rel.related_model
    claims = results._meta.get_field("claim").related_model
    assert claims is not None  # a foreign key's
    rows = list(
        results._default_manager.filter(device__node_name=name, admin_access=False)
        .order_by("pk")
        .values_list("device_id", "claim_id")
    )
    if not rows:
        return {}
    # The claim model's manager (its only one) makes NamespacedQuerySets.
    gate = cast(NamespacedQuerySet, claims._default_manager.get_queryset())
    visible = {
        claim.pk: claim
        for claim in gate.visible_to(user)
        .filter(pk__in={claim for _, claim in rows})
        .only("pk", "namespace", "name")
    }
    holders: dict[int, Holders] = {}
    for device, claim_id in rows:
        held = holders.setdefault(device, Holders())
        claim = visible.get(claim_id)
        if claim is None:
            held.hidden += 1
        elif claim not in held.claims:
            held.claims.append(claim)
    return holders


@login_required
def node_topology_page(request: HttpRequest, name: str) -> HttpResponse:
    """Six queries whatever the node's size: node, devices, the pools' counter sets, the
    readings, the allocation results, the visible claims among them (plus the session's
    two)."""
    node = Node.objects.filter(name=name).first()
    devices = list(Device.objects.visible_to(request.user).on_node(name).defer(*_DEFERRED))
    if node is None and not devices:
        raise Http404("No such node.")
    pools = {(d.driver, d.pool_name) for d in devices}
    pool_filter = Q(pk__in=[])
    for driver, pool in pools:
        pool_filter |= Q(driver=driver, pool_name=pool)
    counter_sets = list(SharedCounterSet.objects.filter(pool_filter)) if pools else []
    readings, simulated = _readings(name) if devices else ({}, False)
    topology = node_topology(
        devices,
        counter_sets=counter_sets,
        readings=readings,
        holders=_holders(name, request.user) if devices else {},
    )
    held = [gpu for gpu in topology.gpus if gpu.claims or gpu.held_by_others or gpu.held_partitions]
    drawing = draw(topology)
    title = (
        f"Topology of {name}: {len(topology.gpus)} devices in {len(topology.numa_nodes)} NUMA nodes"
    )
    context: dict[str, Any] = {
        "name": name,
        "node": node,
        "topology": topology,
        "drawing": drawing,
        "svg": render_svg(drawing, title) if drawing.gpus else "",
        "held": held,
        "states": list(DeviceState),
        "is_simulated": simulated,
        "has_readings": bool(readings),
        "gpus": node.device_plugin_gpus if node else [],
    }
    return render_page(request, "devices/node_topology.html", "topology", context)
