"""The approvals queue (``/approvals/``) and the approve / deny actions. Thin views (STYLE §5):
parse → gate (``get_request_for_user``, ``claims.approvals.may_decide``) → service
(``claims.approvals``) → respond.

Tenant admins see their tenants' requests, portal admins every tenant's; members are told
(403) that approving is their tenant admins' job. Another tenant's request is a 404.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from claims.access import get_request_for_user
from claims.approvals import (
    approval_deadline,
    approve_request,
    deny_request,
    is_approver,
    may_decide,
    pending_for,
)
from claims.models import ClaimRequest
from claims.quota import ClassUsage, judge_quota, tenant_usage
from claims.specs import SpecErrors
from claims.tables import request_state_badge
from portal.durations import format_duration
from portal.htmx import render_page, wants_fragment
from portal.models import Quota, Tenant

__all__ = ["approval_approve", "approval_count", "approval_deny", "approval_list"]

TEMPLATE = "claims/approval_list.html"
PER_PAGE = 25
NOT_AN_APPROVER = (
    "Only tenant admins and portal admins approve claim requests. Your pending requests are "
    "under My claims; ask an admin of your tenant to look at them."
)


OWN_REQUEST = (
    "You may not approve or deny your own request: another admin of the tenant, or a portal "
    "admin, decides on it. You may withdraw it from its page."
)


def _forbidden(request: HttpRequest, text: str = NOT_AN_APPROVER) -> HttpResponse:
    return render(request, "claims/approval_forbidden.html", {"text": text}, status=403)


def _standing(
    requests: list[ClaimRequest],
) -> dict[int, tuple[dict[str, ClassUsage], dict[str, Quota]]]:
    """Per tenant among the pending ``requests``: its usage and quotas by class, each read once
    whatever the number of requests (one usage count per tenant, one quota query in all)."""
    tenant_ids = {r.tenant_id for r in requests if r.state == ClaimRequest.State.PENDING_APPROVAL}
    quotas: dict[int, dict[str, Quota]] = {pk: {} for pk in tenant_ids}
    for quota in Quota.objects.filter(tenant_id__in=tenant_ids):
        quotas[quota.tenant_id][quota.device_class_name] = quota
    tenants = {r.tenant_id: r.tenant for r in requests}
    return {
        pk: (
            tenant_usage(tenants[pk], max_age=settings.CLAIMS_PREVIEW_USAGE_SECONDS),
            quotas[pk],
        )
        for pk in tenant_ids
    }


def approval_row(
    user: Any,
    claim_request: ClaimRequest,
    administered: set[int] | None = None,
    standing: dict[int, tuple[dict[str, ClassUsage], dict[str, Quota]]] | None = None,
) -> dict[str, Any]:
    """What the queue shows of one request: for a pending one, its tenant's usage and limit of
    the class and whether approving it would fit now (advice: approving checks again).
    ``standing``: :func:`_standing` of the page's requests (read here when not given)."""
    row: dict[str, Any] = {
        "request": claim_request,
        "state_badge": request_state_badge(claim_request),
        "may_decide": may_decide(user, claim_request, administered=administered),
        "is_own": claim_request.requested_by_id == user.pk,
        "lease_text": format_duration(claim_request.lease) if claim_request.lease else "",
    }
    if claim_request.state == ClaimRequest.State.PENDING_APPROVAL:
        if standing is None:
            standing = _standing([claim_request])
        usage, quotas = standing[claim_request.tenant_id]
        name = claim_request.device_class_name
        check = judge_quota(
            claim_request.tenant,
            name,
            quotas.get(name),
            usage.get(name, ClassUsage()),
            devices=claim_request.held_devices,
            memory_bytes=claim_request.held_memory_bytes,
        )
        row |= {"check": check, "deadline": approval_deadline(claim_request)}
    return row


@login_required
def approval_list(request: HttpRequest) -> HttpResponse:
    """``?tab=decided``: recently decided requests instead of the pending ones;
    ``?tenant=<slug>``: one tenant; ``?page=``."""
    user = request.user
    if not is_approver(user):
        return _forbidden(request)
    tab = "decided" if request.GET.get("tab") == "decided" else "pending"
    tenants = list(Tenant.objects.administered_by(user).order_by("name"))
    administered = {choice.pk for choice in tenants}
    tenant = request.GET.get("tenant", "")
    requests = pending_for(user).select_related("tenant", "requested_by", "decided_by")
    if tenant:
        requests = requests.filter(tenant__slug=tenant)
    pending = requests.filter(state=ClaimRequest.State.PENDING_APPROVAL).order_by("created_at")
    decided = requests.filter(decided_at__isnull=False).order_by("-decided_at")
    page = Paginator(pending if tab == "pending" else decided, PER_PAGE).get_page(
        request.GET.get("page")
    )
    requests_on_page = list(page)
    standing = _standing(requests_on_page)
    context = {
        "tab": tab,
        "tenants": tenants,
        "tenant": tenant,
        "page": page,
        "rows": [
            approval_row(user, claim_request, administered, standing)
            for claim_request in requests_on_page
        ],
        "pending_count": pending.count() if tab == "decided" else page.paginator.count,
        "timeout_text": format_duration(settings.CLAIMS_APPROVAL_TIMEOUT),
    }
    return render_page(request, TEMPLATE, "approval-table", context)


@login_required
def approval_count(request: HttpRequest) -> HttpResponse:
    """The navigation's badge (htmx, loaded after the page): how many requests wait for the
    user's decision; empty for everyone else."""
    count = 0
    if is_approver(request.user):
        count = pending_for(request.user).filter(state=ClaimRequest.State.PENDING_APPROVAL).count()
    return render(request, "claims/approval_list.html#approval-badge", {"count": count})


def _next_url(request: HttpRequest) -> str:
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("approval-list")


def _decide(request: HttpRequest, pk: Any, *, approve: bool) -> HttpResponse:
    claim_request = get_request_for_user(request.user, pk)  # another tenant's: 404
    if not may_decide(request.user, claim_request):
        own = claim_request.requested_by_id == request.user.pk and is_approver(request.user)
        return _forbidden(request, OWN_REQUEST if own else NOT_AN_APPROVER)
    comment = request.POST.get("comment", "")
    problems: list[str] = []
    try:
        if approve:
            approve_request(user=request.user, request=claim_request, comment=comment)
        else:
            deny_request(user=request.user, request=claim_request, comment=comment)
    except SpecErrors as error:
        problems = [problem for values in error.errors.values() for problem in values]
    done = (
        f"Approved {claim_request}: it is being applied." if approve else f"Denied {claim_request}."
    )
    if wants_fragment(request):
        # The queue swaps the row in place, showing the outcome (or why not) on it.
        claim_request.refresh_from_db()
        row = approval_row(request.user, claim_request)
        row |= {"problems": problems, "done": "" if problems else done}
        return render(request, f"{TEMPLATE}#approval-row", {"row": row, "tab": "pending"})
    for problem in problems:
        messages.error(request, problem)
    if not problems:
        messages.success(request, done)
    return redirect(_next_url(request))


@login_required
@require_POST
def approval_approve(request: HttpRequest, pk: Any) -> HttpResponse:
    return _decide(request, pk, approve=True)


@login_required
@require_POST
def approval_deny(request: HttpRequest, pk: Any) -> HttpResponse:
    return _decide(request, pk, approve=False)
