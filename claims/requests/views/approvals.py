"""The approvals queue (``/approvals/``) and the approve / deny actions. Thin views (STYLE §5):
parse → gate (``get_request_for_user``, ``claims.requests.approvals.may_decide``) → service
(``claims.requests.approvals``) → respond.

Tenant admins see their tenants' requests, portal admins every tenant's; members are told
(403) that approving is their tenant admins' job. Another tenant's request is a 404. The queue
holds requests pending approval and renewals of running requests' leases that wait.

A decision made with htmx answers the decided row, the other rows of its tenant judged again
against the usage now (an approval takes quota), the *Waiting* count (out of band) and the
``approvals-changed`` event, on which the navigation's badge reloads.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Page, Paginator
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from claims.access import get_request_for_user
from claims.models import ClaimRequest
from claims.requests.approvals import (
    approval_deadline,
    approve_request,
    deny_request,
    is_approver,
    may_decide,
    pending_for,
)
from claims.requests.quota import ClassUsage, judge_quota, tenant_usage
from claims.requests.specs import SpecErrors
from claims.tables import request_state_badge
from portal.models import Quota, Tenant
from toolkit.durations import format_duration
from toolkit.htmx import render_page, wants_fragment

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
    # Read afresh (not the preview's few-seconds-old usage): right after a decision the rows
    # must be judged against what the tenant holds now.
    quotas: dict[int, dict[str, Quota]] = {pk: {} for pk in tenant_ids}
    for quota in Quota.objects.filter(tenant_id__in=tenant_ids):
        quotas[quota.tenant_id][quota.device_class_name] = quota
    tenants = {r.tenant_id: r.tenant for r in requests}
    return {pk: (tenant_usage(tenants[pk]), quotas[pk]) for pk in tenant_ids}


def approval_row(
    user: Any,
    claim_request: ClaimRequest,
    administered: set[int] | None = None,
    standing: dict[int, tuple[dict[str, ClassUsage], dict[str, Quota]]] | None = None,
) -> dict[str, Any]:
    """What the queue shows of one request: for a pending one, its tenant's usage and limit of
    the class and whether approving it would fit now (advice: approving checks again).
    ``standing``: :func:`_standing` of the page's requests (read here when not given)."""
    renewal = claim_request.state != ClaimRequest.State.PENDING_APPROVAL and (
        claim_request.has_pending_renewal
    )
    row: dict[str, Any] = {
        "request": claim_request,
        "state_badge": request_state_badge(claim_request),
        "may_decide": may_decide(user, claim_request, administered=administered),
        "is_own": claim_request.asked_by_id == user.pk,
        "lease_text": format_duration(claim_request.lease) if claim_request.lease else "",
        "waits": claim_request.awaits_approval,
        "renewal": renewal,
    }
    if renewal:
        renewal_lease = claim_request.renewal_lease
        row |= {
            "renewal_lease_text": format_duration(renewal_lease) if renewal_lease else "",
            "asked_by": claim_request.renewal_requested_by,
            "asked_at": claim_request.renewal_requested_at,
            "reasons": claim_request.renewal_reasons,
            "deadline": approval_deadline(claim_request),
        }
    elif claim_request.state == ClaimRequest.State.PENDING_APPROVAL:
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
        row |= {
            "check": check,
            "deadline": approval_deadline(claim_request),
            "asked_by": claim_request.requested_by,
            "asked_at": claim_request.created_at,
            "reasons": claim_request.approval_reasons,
        }
    return row


def _queue(user: Any, *, tab: str, tenant: str, page_number: Any) -> tuple[Page[ClaimRequest], int]:
    """One page of the queue's tab (``pending``: what waits for a decision, oldest first;
    ``decided``: recent decisions) and how many wait in all."""
    requests = pending_for(user).select_related(
        "tenant", "requested_by", "decided_by", "renewal_requested_by"
    )
    if tenant:
        requests = requests.filter(tenant__slug=tenant)
    waiting = requests.awaiting_approval().order_by(
        Coalesce("renewal_requested_at", "created_at"), "pk"
    )
    decided = requests.filter(decided_at__isnull=False).order_by("-decided_at")
    page = Paginator(waiting if tab == "pending" else decided, PER_PAGE).get_page(page_number)
    return page, waiting.count() if tab == "decided" else page.paginator.count


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
    page, waiting_count = _queue(user, tab=tab, tenant=tenant, page_number=request.GET.get("page"))
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
        "pending_count": waiting_count,
        "timeout_text": format_duration(settings.CLAIMS_APPROVAL_TIMEOUT),
    }
    return render_page(request, TEMPLATE, "approval-table", context)


@login_required
def approval_count(request: HttpRequest) -> HttpResponse:
    """The navigation's badge (htmx, loaded after the page): how many requests wait for the
    user's decision; empty for everyone else."""
    count = 0
    if is_approver(request.user):
        count = pending_for(request.user).awaiting_approval().count()
    return render(request, "claims/approval_list.html#approval-badge", {"count": count})


def _next_url(request: HttpRequest) -> str:
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("approval-list")


def _queue_filters(target: str) -> dict[str, str]:
    """The queue's ``tenant`` and ``page`` in ``target`` (the page a decision came from)."""
    url = urlsplit(target)
    if url.path != reverse("approval-list"):
        return {}
    query = QueryDict(url.query)
    return {"tenant": query.get("tenant", ""), "page": query.get("page", "")}


def _done_text(claim_request: ClaimRequest, *, approve: bool, renewal: bool) -> str:
    if renewal:
        lease = claim_request.lease
        return (
            f"Approved the renewal of {claim_request}: its lease is "
            f"{format_duration(lease) if lease else 'none'} from now."
            if approve
            else f"Denied the renewal of {claim_request}: its lease is unchanged."
        )
    return (
        f"Approved {claim_request}: it is being applied." if approve else f"Denied {claim_request}."
    )


def _decided_fragment(
    request: HttpRequest, claim_request: ClaimRequest, problems: list[str], done: str
) -> HttpResponse:
    """The decided row (its outcome, or why not), then out of band: its tenant's other rows on
    the queue's page judged against the usage now, and the *Waiting* count; and the
    ``approvals-changed`` event for the navigation's badge."""
    user = request.user
    claim_request.refresh_from_db()
    row = approval_row(user, claim_request)
    row |= {"problems": problems, "done": "" if problems else done}
    filters = _queue_filters(request.POST.get("next", ""))
    page, waiting_count = _queue(
        user, tab="pending", tenant=filters.get("tenant", ""), page_number=filters.get("page")
    )
    others = [
        other
        for other in page
        if other.pk != claim_request.pk and other.tenant_id == claim_request.tenant_id
    ]
    administered = set(Tenant.objects.administered_by(user).values_list("pk", flat=True))
    standing = _standing(others)
    context = {
        "row": row,
        "tab": "pending",
        "others": [approval_row(user, other, administered, standing) for other in others],
        "pending_count": waiting_count,
    }
    response = render(request, f"{TEMPLATE}#approval-decided", context)
    response["HX-Trigger"] = "approvals-changed"
    return response


def _decide(request: HttpRequest, pk: Any, *, approve: bool) -> HttpResponse:
    claim_request = get_request_for_user(request.user, pk)  # another tenant's: 404
    if not may_decide(request.user, claim_request):
        own = claim_request.asked_by_id == request.user.pk and is_approver(request.user)
        return _forbidden(request, OWN_REQUEST if own else NOT_AN_APPROVER)
    comment = request.POST.get("comment", "")
    renewal = (
        claim_request.state != ClaimRequest.State.PENDING_APPROVAL
        and claim_request.has_pending_renewal
    )
    problems: list[str] = []
    try:
        if approve:
            approve_request(user=request.user, request=claim_request, comment=comment)
        else:
            deny_request(user=request.user, request=claim_request, comment=comment)
    except SpecErrors as error:
        problems = [problem for values in error.errors.values() for problem in values]
    done = _done_text(claim_request, approve=approve, renewal=renewal)
    if wants_fragment(request):
        return _decided_fragment(request, claim_request, problems, done)
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
