"""A tenant's members: everyone in the tenant sees the list; tenant admins (and portal admins)
add members by username, change roles and remove members. htmx swaps the panel in place;
every action is also a plain POST that redirects back."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from portal.access import get_tenant_for_user
from portal.forms import MemberAddForm, MemberRoleForm, add_service_errors
from portal.models import Membership, Tenant
from portal.services import tenants as tenant_services
from toolkit.htmx import render_page, wants_fragment

__all__ = ["member_edit", "member_list", "member_remove"]

TEMPLATE = "portal/tenant_members.html"


def _panel(
    request: HttpRequest,
    tenant: Tenant,
    *,
    form: MemberAddForm | None = None,
    errors: dict[int, list[str]] | None = None,
    status: int = 200,
) -> HttpResponse:
    can_manage = Tenant.objects.administered_by(request.user).filter(pk=tenant.pk).exists()
    context: dict[str, Any] = {
        "tenant": tenant,
        "memberships": tenant.memberships.select_related("user").order_by("user__username"),
        "can_manage": can_manage,
        "form": form or MemberAddForm(),
        "role_choices": Membership.Role.choices,
        "row_errors": errors or {},
        "is_fragment": wants_fragment(request),
    }
    return render_page(request, TEMPLATE, "member-panel", context, status=status)


def _done(request: HttpRequest, tenant: Tenant, message: str) -> HttpResponse:
    messages.success(request, message)
    if wants_fragment(request):
        return _panel(request, tenant)
    return redirect("tenant-members", slug=tenant.slug)


def _membership(tenant: Tenant, pk: int) -> Membership:
    membership = tenant.memberships.select_related("user").filter(pk=pk).first()
    if membership is None:
        raise Http404("No such member.")
    return membership


@login_required
def member_list(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the members; POST (tenant admins): add one by username."""
    if request.method != "POST":
        return _panel(request, get_tenant_for_user(request.user, slug))
    tenant = get_tenant_for_user(request.user, slug, write=True)
    form = MemberAddForm(request.POST)
    if form.is_valid():
        try:
            membership = tenant_services.add_member(
                actor=request.user,
                tenant=tenant,
                username=form.cleaned_data["username"],
                role=Membership.Role(form.cleaned_data["role"]),
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            return _done(
                request,
                tenant,
                f"{membership.user.get_username()} added as "
                f"{membership.get_role_display().lower()}.",
            )
    return _panel(request, tenant, form=form, status=422)


@login_required
def member_edit(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """POST (tenant admins): change a member's role. GET shows the members page."""
    if request.method != "POST":
        tenant = get_tenant_for_user(request.user, slug)
        _membership(tenant, pk)
        return redirect("tenant-members", slug=tenant.slug)
    tenant = get_tenant_for_user(request.user, slug, write=True)
    membership = _membership(tenant, pk)
    form = MemberRoleForm(request.POST)
    if not form.is_valid():
        return _panel(request, tenant, errors={membership.pk: ["Choose a role."]}, status=422)
    try:
        tenant_services.set_member(
            actor=request.user,
            tenant=tenant,
            user=membership.user,
            role=Membership.Role(form.cleaned_data["role"]),
        )
    except ValidationError as error:
        return _panel(request, tenant, errors={membership.pk: error.messages}, status=422)
    return _done(request, tenant, f"{membership.user.get_username()}'s role saved.")


@login_required
def member_remove(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """GET (tenant admins) asks for confirmation; POST removes the member."""
    tenant = get_tenant_for_user(request.user, slug, write=True)
    membership = _membership(tenant, pk)
    if request.method != "POST":
        context: dict[str, Any] = {"tenant": tenant, "membership": membership}
        return render(request, "portal/membership_confirm_delete.html", context)
    try:
        tenant_services.remove_member(actor=request.user, membership=membership)
    except ValidationError as error:
        if wants_fragment(request):
            return _panel(request, tenant, errors={membership.pk: error.messages}, status=422)
        context = {"tenant": tenant, "membership": membership, "errors": error.messages}
        return render(request, "portal/membership_confirm_delete.html", context, status=422)
    return _done(request, tenant, f"{membership.user.get_username()} removed from {tenant.name}.")
