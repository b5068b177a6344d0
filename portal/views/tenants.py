"""Tenant pages: the list (filterable) and one tenant with namespaces, members and quotas."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django_tables2 import RequestConfig

from portal.access import get_tenant_for_user
from portal.filtersets import TenantFilterSet
from portal.htmx import render_page
from portal.models import AuditEvent, Tenant
from portal.tables import AuditEventTable, TenantTable

__all__ = ["tenant_detail", "tenant_list"]


@login_required
def tenant_list(request: HttpRequest) -> HttpResponse:
    queryset = (
        Tenant.objects.visible_to(request.user)
        .annotate(
            member_count=Count("memberships", distinct=True),
            quota_count=Count("quotas", distinct=True),
        )
        .prefetch_related("namespaces")
    )
    filterset = TenantFilterSet(request.GET, queryset=queryset)
    table = TenantTable(filterset.qs)
    RequestConfig(request, paginate={"per_page": 25}).configure(table)
    return render_page(
        request,
        "portal/tenant_list.html",
        "tenant-table",
        {"filterset": filterset, "table": table},
    )


@login_required
def tenant_detail(request: HttpRequest, slug: str) -> HttpResponse:
    tenant = get_tenant_for_user(request.user, slug)
    can_administer = Tenant.objects.administered_by(request.user).filter(pk=tenant.pk).exists()
    audit_table = None
    if can_administer:
        events = AuditEvent.objects.visible_to(request.user).filter(tenant=tenant)
        audit_table = AuditEventTable(events[:20])
    context = {
        "tenant": tenant,
        "namespaces": tenant.namespaces.all(),
        "memberships": tenant.memberships.select_related("user").order_by("user__username"),
        "quotas": tenant.quotas.with_cluster_presence(),
        "can_administer": can_administer,
        "audit_table": audit_table,
    }
    return render(request, "portal/tenant_detail.html", context)
