"""Claim pages (read-only for now): the tenant-scoped list and one claim."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from claims.access import get_claim_for_user
from claims.filtersets import IdleClaimFilterSet, ResourceClaimFilterSet
from claims.models import AllocatedDevice, ClaimIdleness, ResourceClaim
from claims.requests.preview import why_pending
from claims.tables import (
    IdleClaimTable,
    ResourceClaimTable,
    claim_state_badge,
    idle_badge,
    idle_why,
)
from claims.usage.utilisation import claim_utilisation
from devices.models import Pod
from devices.views.devices import pretty_json
from dra.model import selector_expressions
from toolkit.charts import time_range
from toolkit.htmx import render_list, render_page, wants_fragment

__all__ = ["idle_claim_list", "resourceclaim_detail", "resourceclaim_list"]


@login_required
def resourceclaim_list(request: HttpRequest) -> HttpResponse:
    visible = ResourceClaim.objects.visible_to(request.user)

    def filter_choices() -> dict[str, Any]:
        namespaces = visible.order_by("namespace").values_list("namespace", flat=True)
        drivers = (
            AllocatedDevice.objects.filter(claim__in=visible)
            .order_by("driver")
            .values_list("driver", flat=True)
        )
        return {
            "namespace": ("All namespaces", list(namespaces.distinct())),
            "driver": ("All drivers", list(drivers.distinct())),
        }

    return render_list(
        request,
        filterset=ResourceClaimFilterSet(request.GET, queryset=visible.with_device_counts()),
        table_class=ResourceClaimTable,
        template="claims/resourceclaim_list.html",
        fragment="resourceclaim-table",
        filter_choices=filter_choices,
    )


@login_required
def idle_claim_list(request: HttpRequest) -> HttpResponse:
    """Idle claims (``claims.usage.idle``): tenants see their namespaces', portal admins all."""
    visible = ResourceClaim.objects.visible_to(request.user)
    idle = visible.idle().select_related("idleness").order_by("idleness__idle_since", "pk")

    def filter_choices() -> dict[str, Any]:
        namespaces = visible.idle().order_by("namespace").values_list("namespace", flat=True)
        return {"namespace": ("All namespaces", list(namespaces.distinct()))}

    return render_list(
        request,
        filterset=IdleClaimFilterSet(request.GET, queryset=idle),
        table_class=IdleClaimTable,
        template="claims/idle_claim_list.html",
        fragment="idle-claim-table",
        filter_choices=filter_choices,
    )


def _requests(claim: ResourceClaim) -> list[dict[str, Any]]:
    """``spec.devices.requests`` flattened for display: exact requests, and the alternatives
    of ``firstAvailable`` ones."""
    rows = []
    for request in (claim.spec.get("devices") or {}).get("requests") or []:
        if not isinstance(request, dict):
            continue
        alternatives = request.get("firstAvailable")
        if isinstance(alternatives, list):
            options = [
                {"name": f"{request.get('name')}/{a.get('name')}", **a}
                for a in alternatives
                if isinstance(a, dict)
            ]
        else:
            options = [{"name": request.get("name"), **(request.get("exactly") or {})}]
        for option in options:
            rows.append(
                {
                    "name": option.get("name"),
                    "device_class": option.get("deviceClassName", ""),
                    "mode": option.get("allocationMode", "ExactCount"),
                    "count": option.get("count", 1)
                    if option.get("allocationMode", "ExactCount") == "ExactCount"
                    else "",
                    "admin_access": option.get("adminAccess") is True,
                    "selectors": [
                        e for e in selector_expressions(option.get("selectors")) if e is not None
                    ],
                    "is_alternative": isinstance(alternatives, list),
                }
            )
    return rows


@login_required
def resourceclaim_detail(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    claim = get_claim_for_user(request.user, namespace, name)
    results = list(claim.allocated_devices.select_related("device"))
    consumers = list(claim.consumers.all())
    pods = {
        p.name: p
        for p in Pod.objects.filter(namespace=claim.namespace, name__in=[c.name for c in consumers])
    }
    context: dict[str, Any] = {
        "claim": claim,
        "state_badge": claim_state_badge(claim),
        "allocations": [{"result": r, "device": r.device} for r in results],
        "held_count": sum(1 for r in results if r.holds_device),
        "observed_count": sum(1 for r in results if not r.holds_device),
        "consumers": [{"consumer": c, "pod": pods.get(c.name)} for c in consumers],
    }
    if wants_fragment(request):
        # The live part only: state, allocation and consumers (polled).
        return render_page(request, "claims/resourceclaim_detail.html", "claim-status", context)
    idleness = ClaimIdleness.objects.filter(claim=claim).first()
    context |= {
        "idleness": idleness,
        "idle_badge": idle_badge(idleness),
        "idle_why": idle_why(idleness) if idleness is not None else "",
        "now": timezone.now(),
        "requests": _requests(claim),
        "node_selector_json": pretty_json(claim.allocation_node_selector)
        if claim.allocation_node_selector
        else "",
        "raw_json": pretty_json(claim.raw),
        "pending": why_pending(claim),
        "utilisation": claim_utilisation(claim, span=time_range(request.GET.get("range"))),
    }
    return render_page(request, "claims/resourceclaim_detail.html", "claim-status", context)
