"""Tenant pages: the list (filterable), one tenant with namespaces, members and quotas, and the
forms that change a tenant: create (portal admins), settings (tenant admins: description,
approval, token lifetime; portal admins also rename) and namespaces (portal admins)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django_tables2 import RequestConfig

from portal.access import get_tenant_for_user
from portal.filtersets import TenantFilterSet
from portal.forms import NamespacesForm, TenantCreateForm, TenantSettingsForm, add_service_errors
from portal.models import AuditEvent, Tenant
from portal.services import tenants as tenant_services
from portal.tables import AuditEventTable, TenantTable
from toolkit.htmx import render_page

__all__ = ["tenant_create", "tenant_detail", "tenant_edit", "tenant_list", "tenant_namespaces"]


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


def _require_portal_admin(request: HttpRequest, what: str) -> None:
    if not request.user.is_staff:
        raise PermissionDenied(f"Only portal admins {what}.")


@login_required
def tenant_create(request: HttpRequest) -> HttpResponse:
    _require_portal_admin(request, "create tenants")
    form = TenantCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            tenant = tenant_services.save_tenant(
                actor=request.user,
                tenant=None,
                namespaces=form.namespace_names(),
                name=data["name"],
                slug=data["slug"],
                description=data["description"],
                requires_approval=data["requires_approval"],
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(
                request, f"Tenant “{tenant.name}” created. Add its members and quotas."
            )
            return redirect(tenant)
    status = 422 if form.errors else 200
    return render(request, "portal/tenant_form.html", {"form": form, "tenant": None}, status=status)


@login_required
def tenant_edit(request: HttpRequest, slug: str) -> HttpResponse:
    """Tenant admins edit the description, the approval setting and the API-token lifetime
    limit of their tenant; portal admins also its name."""
    tenant = get_tenant_for_user(request.user, slug, write=True)
    can_rename = bool(request.user.is_staff)
    initial = {
        "name": tenant.name,
        "description": tenant.description,
        "requires_approval": tenant.requires_approval,
        "max_token_lifetime": tenant.max_token_lifetime,
    }
    form = TenantSettingsForm(request.POST or None, initial=initial, can_rename=can_rename)
    if request.method == "POST" and form.is_valid():
        try:
            tenant_services.save_tenant(actor=request.user, tenant=tenant, **form.cleaned_data)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, "Tenant settings saved.")
            return redirect(tenant)
    status = 422 if form.errors else 200
    return render(
        request, "portal/tenant_form.html", {"form": form, "tenant": tenant}, status=status
    )


@login_required
def tenant_namespaces(request: HttpRequest, slug: str) -> HttpResponse:
    """Which namespaces a tenant owns decides whose claims count against it: portal admins
    only."""
    tenant = get_tenant_for_user(request.user, slug)
    _require_portal_admin(request, "change which namespaces a tenant owns")
    initial = {"namespaces": "\n".join(tenant.namespace_names)}
    form = NamespacesForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            tenant_services.set_tenant_namespaces(
                actor=request.user, tenant=tenant, namespaces=form.namespace_names()
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, "Namespaces saved.")
            return redirect(tenant)
    status = 422 if form.errors else 200
    return render(
        request, "portal/tenant_namespaces.html", {"form": form, "tenant": tenant}, status=status
    )
