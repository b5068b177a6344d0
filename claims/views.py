"""Claim pages (read-only for now): the tenant-scoped list and one claim."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django_tables2 import RequestConfig

from claims.access import get_claim_for_user
from claims.filtersets import ResourceClaimFilterSet
from claims.models import AllocatedDevice, ResourceClaim
from claims.tables import ResourceClaimTable, claim_state_badge
from devices.models import Pod
from devices.views.devices import pretty_json
from portal.htmx import render_page, wants_fragment

__all__ = ["resourceclaim_detail", "resourceclaim_list"]


@login_required
def resourceclaim_list(request: HttpRequest) -> HttpResponse:
    visible = ResourceClaim.objects.visible_to(request.user)
    queryset = visible.annotate(
        device_count=Count("allocated_devices", filter=Q(allocated_devices__admin_access=False))
    )
    filterset = ResourceClaimFilterSet(request.GET, queryset=queryset)
    table = ResourceClaimTable(filterset.qs)
    RequestConfig(request, paginate={"per_page": 50}).configure(table)
    context: dict[str, Any] = {
        "filterset": filterset,
        "table": table,
        "is_filtered": any(filterset.form.data.get(name) for name in filterset.filters),
    }
    if not wants_fragment(request):
        context["namespaces"] = list(
            visible.order_by("namespace").values_list("namespace", flat=True).distinct()
        )
        context["drivers"] = list(
            AllocatedDevice.objects.filter(claim__in=visible)
            .order_by("driver")
            .values_list("driver", flat=True)
            .distinct()
        )
        context["states"] = ResourceClaim.State.choices
    return render_page(request, "claims/resourceclaim_list.html", "resourceclaim-table", context)


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
                        s["cel"]["expression"]
                        for s in option.get("selectors") or []
                        if isinstance(s, dict) and isinstance(s.get("cel"), dict)
                    ],
                    "is_alternative": isinstance(alternatives, list),
                }
            )
    return rows


@login_required
def resourceclaim_detail(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    claim = get_claim_for_user(request.user, namespace, name)
    results = claim.allocated_devices.select_related("device")
    allocations = [{"result": r, "device": r.device} for r in results]
    consumers = list(claim.consumers.all())
    pods = {
        p.name: p
        for p in Pod.objects.filter(namespace=claim.namespace, name__in=[c.name for c in consumers])
    }
    context = {
        "claim": claim,
        "state_badge": claim_state_badge(claim),
        "requests": _requests(claim),
        "allocations": allocations,
        "consumers": [{"consumer": c, "pod": pods.get(c.name)} for c in consumers],
        "node_selector_json": pretty_json(claim.allocation_node_selector)
        if claim.allocation_node_selector
        else "",
        "raw_json": pretty_json(claim.raw),
    }
    return render(request, "claims/resourceclaim_detail.html", context)
