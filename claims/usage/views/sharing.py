"""The sharing page: who shares what, one tab per kind of sharing, each list paginated."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse

from claims.usage.sharing import (
    SHARING_TABS,
    admin_observers,
    claims_with_several_consumers,
    claims_with_sharing_config,
    device_url,
    devices_with_several_allocations,
    sharing_settings,
)
from toolkit.htmx import render_page

__all__ = ["sharing"]

PER_PAGE = 25
COUNTS_SECONDS = 30
TEMPLATE = "claims/sharing.html"


def _pods_row(claim: Any) -> dict[str, Any]:
    return {
        "claim": claim,
        "consumers": list(claim.consumers.all()),
        "devices": [
            (result, device_url(result))
            for result in claim.allocated_devices.all()
            if not result.admin_access
        ],
        "settings": sharing_settings(claim),
    }


def _devices_row(device: Any) -> dict[str, Any]:
    results = [r for r in device.allocations.all() if not r.admin_access]
    return {
        "device": device,
        "shares": [
            {
                "result": result,
                "claim": result.visible_claim,
                "capacity": sorted((result.consumed_capacity or {}).items()),
            }
            for result in results
        ],
    }


def _configs_row(claim: Any) -> dict[str, Any]:
    return {
        "claim": claim,
        "settings": [
            {"setting": s, "devices": [(r, device_url(r)) for r in s.devices]}
            for s in sharing_settings(claim)
        ],
    }


def _observers_row(claim: Any) -> dict[str, Any]:
    return {
        "claim": claim,
        "consumers": list(claim.consumers.all()),
        "devices": [(result, device_url(result)) for result in claim.observed],
    }


_LISTS = {
    "pods": (claims_with_several_consumers, _pods_row),
    "devices": (devices_with_several_allocations, _devices_row),
    "configs": (claims_with_sharing_config, _configs_row),
    "observers": (admin_observers, _observers_row),
}


@login_required
def sharing(request: HttpRequest) -> HttpResponse:
    """``?tab=pods|devices|configs|observers`` (default: the first with entries), ``?page=``.
    The chosen tab's list is always current; the other tabs' counts are remembered for
    ``COUNTS_SECONDS`` per user (each is a scan of every claim or allocation)."""
    user = request.user
    key = f"sharing:counts:{user.pk}"
    counts: dict[str, int] = cache.get(key) or {}
    tab = request.GET.get("tab", "")
    if tab not in _LISTS:
        counts = counts or {name: _LISTS[name][0](user).count() for name, _ in SHARING_TABS}
        tab = next((t for t, _ in SHARING_TABS if counts[t]), SHARING_TABS[0][0])
    reads, row = _LISTS[tab]
    page = Paginator(reads(user), PER_PAGE).get_page(request.GET.get("page"))
    counts[tab] = page.paginator.count
    for name, _ in SHARING_TABS:
        if name not in counts:
            counts[name] = _LISTS[name][0](user).count()
    cache.set(key, counts, COUNTS_SECONDS)
    context = {
        "tab": tab,
        "tabs": [(name, label, counts[name]) for name, label in SHARING_TABS],
        "page": page,
        "rows": [row(item) for item in page],
    }
    return render_page(request, TEMPLATE, "sharing-list", context)
