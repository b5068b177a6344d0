"""The home page: what exists, at a glance."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.utils.cache import patch_cache_control

from claims.models import ResourceClaim, UsageRollup
from claims.usage.utilisation import scopes_utilisation
from home.overview import cluster_overview
from portal.models import ApiToken, ExternalIdentity, Membership, Quota, Tenant
from toolkit.htmx import render_page, wants_fragment
from toolkit.http import AuthenticatedHttpRequest

__all__ = ["dashboard", "favicon"]


@login_required
def dashboard(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The whole page, or (htmx, every few seconds) the live cluster card and mirror banner.
    Someone in no tenant (and no portal admin) gets the "no tenant yet" page instead."""
    if not request.user.is_staff and not Tenant.objects.visible_to(request.user).exists():
        return no_tenant(request)
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


def no_tenant(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Signed in but a member of no tenant: says why the portal shows nothing and whom to ask,
    with the groups that single sign-on maps to tenants (``OIDC_GROUP_MAP``) and the person's
    groups at their last sign-in."""
    grants = [
        (group, grant)
        for group, group_grants in settings.OIDC_GROUP_MAP.items()
        for grant in group_grants
    ]
    names = dict(
        Tenant.objects.filter(slug__in={grant.tenant for _, grant in grants}).values_list(
            "slug", "name"
        )
    )
    identity = ExternalIdentity.objects.filter(user=request.user).first()
    context = {
        "oidc_enabled": settings.OIDC_ENABLED,
        "provider_name": settings.OIDC_PROVIDER_NAME,
        "identity": identity,
        "mapped_groups": [
            {
                "group": group,
                "tenant": names.get(grant.tenant, grant.tenant),
                "role": Membership.Role(grant.role).label,
            }
            for group, grant in sorted(grants, key=lambda item: (item[0], item[1].tenant))
            if grant.tenant in names
        ],
        "admin_groups": settings.OIDC_ADMIN_GROUPS,
    }
    return render(request, "home/no_tenant.html", context)


def favicon(request: HttpRequest) -> HttpResponse:
    """``/favicon.ico``, which browsers ask for where a page names no icon (the admin, the
    browsable API, JSON): the portal's SVG icon from static files. Public, like any static
    file; a day's cache, as the static name changes with each release's manifest."""
    response = redirect(static("img/favicon.svg"))
    patch_cache_control(response, public=True, max_age=86400)
    return response
