"""A tenant's quotas page (usage against every limit, per device class) and the quota forms.

Members see their tenant's usage; quotas are set by portal admins, who create, edit and delete
them here (tenant admins see them read-only). Writes go through ``save_quota``/``delete_quota``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from portal.access import get_tenant_for_user
from portal.forms import QuotaForm, add_service_errors
from portal.models import Quota, Tenant
from portal.services import tenants as tenant_services

__all__ = ["quota_delete", "quota_edit", "quota_list", "quota_new"]


@login_required
def quota_list(request: HttpRequest, slug: str) -> HttpResponse:
    tenant = get_tenant_for_user(request.user, slug)
    context = {
        "tenant": tenant,
        "quotas": list(tenant.quotas.with_cluster_presence()),
        "can_edit": bool(request.user.is_staff),
        "namespaces": tenant.namespaces.all(),
    }
    return render(request, "portal/tenant_quotas.html", context)


def _gate(request: HttpRequest, slug: str) -> Tenant:
    """Another tenant's quota pages are 404; only portal admins may change quotas (403)."""
    tenant = get_tenant_for_user(request.user, slug)
    if not request.user.is_staff:
        raise PermissionDenied("Quotas are set by portal admins.")
    return tenant


def _quota(tenant: Tenant, pk: int) -> Quota:
    quota = tenant.quotas.filter(pk=pk).first()
    if quota is None:
        raise Http404("No such quota.")
    return quota


def _initial(quota: Quota | None) -> dict[str, Any]:
    if quota is None:
        return {}
    return {name: getattr(quota, name) for name in tenant_services.QUOTA_FIELDS}


def _quota_form(request: HttpRequest, tenant: Tenant, quota: Quota | None) -> HttpResponse:
    initial = _initial(quota) or {"device_class_name": request.GET.get("device_class_name", "")}
    form = QuotaForm(
        request.POST or None,
        initial=initial,
        device_classes=tenant_services.cluster_device_class_names(),
    )
    if request.method == "POST" and form.is_valid():
        try:
            saved = tenant_services.save_quota(
                actor=request.user, tenant=tenant, previous=quota, **form.limits()
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            verb = "saved" if quota is not None else "created"
            messages.success(request, f"Quota for {saved.device_class_name} {verb}.")
            return redirect("tenant-quotas", slug=tenant.slug)
    status = 422 if form.errors else 200
    context = {"form": form, "tenant": tenant, "quota": quota}
    return render(request, "portal/quota_form.html", context, status=status)


@login_required
def quota_new(request: HttpRequest, slug: str) -> HttpResponse:
    tenant = _gate(request, slug)
    return _quota_form(request, tenant, None)


@login_required
def quota_edit(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    tenant = _gate(request, slug)
    return _quota_form(request, tenant, _quota(tenant, pk))


@login_required
def quota_delete(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """GET asks for confirmation (a page, no JS needed); POST deletes."""
    tenant = _gate(request, slug)
    quota = _quota(tenant, pk)
    if request.method == "POST":
        tenant_services.delete_quota(actor=request.user, quota=quota)
        messages.success(
            request,
            f"Quota for {quota.device_class_name} deleted: {tenant.name} can no longer claim "
            "devices of that class.",
        )
        return redirect("tenant-quotas", slug=tenant.slug)
    return render(request, "portal/quota_confirm_delete.html", {"tenant": tenant, "quota": quota})
