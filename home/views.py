"""The home page: what exists, at a glance."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.templatetags.static import static
from django.utils.cache import patch_cache_control

from claims.models import ResourceClaim, UsageRollup
from claims.utilisation import scopes_utilisation
from home.overview import cluster_overview
from portal.htmx import render_page, wants_fragment
from portal.models import ApiToken, Quota, Tenant

__all__ = ["dashboard", "favicon"]


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """The whole page, or (htmx, every few seconds) the live cluster card and mirror banner."""
    cluster = cluster_overview(request.user)
    if wants_fragment(request):
        return render_page(request, "home/dashboard.html", "cluster-live", {"cluster": cluster})
    tenants = Tenant.objects.visible_to(request.user).prefetch_related("namespaces")
    shown = list(tenants[:8])
    # Each tenant's last 24 h (the default range), one query for all of them.
    usage = scopes_utilisation(UsageRollup.Scope.TENANT, [t.slug for t in shown])
    held = ResourceClaim.objects.filter(tenant__in=shown).devices_held_by_tenant()
    for tenant in shown:
        tenant.utilisation = usage.get(tenant.slug)  # type: ignore[attr-defined]
        tenant.devices_held = held.get(tenant.pk, 0)  # type: ignore[attr-defined]
    context = {
        "tenants": shown,
        "tenant_count": tenants.count(),
        "quota_count": Quota.objects.visible_to(request.user).count(),
        "token_count": ApiToken.objects.filter(user=request.user).usable().count(),
        "cluster": cluster,
    }
    return render_page(request, "home/dashboard.html", "cluster-live", context)


def favicon(request: HttpRequest) -> HttpResponse:
    """``/favicon.ico``, which browsers ask for where a page names no icon (the admin, the
    browsable API, JSON): the portal's SVG icon from static files. Public, like any static
    file; a day's cache, as the static name changes with each release's manifest."""
    response = redirect(static("img/favicon.svg"))
    patch_cache_control(response, public=True, max_age=86400)
    return response
