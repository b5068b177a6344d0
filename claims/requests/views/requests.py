"""Self-service claim pages: My claims, New claim (with its live preview), one request, and
its release and renew actions. Thin views (STYLE §5): parse → gate → service → respond."""

from __future__ import annotations

from typing import Any, cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from claims.access import get_request_for_user
from claims.filtersets import ClaimRequestFilterSet
from claims.lifecycle.manifest import manifest_document
from claims.models import ClaimRequest, ResourceClaim
from claims.requests.approvals import approval_deadline, may_decide
from claims.requests.forms import ALTERNATIVE_ROWS, ClaimRequestForm, RenewForm
from claims.requests.preview import Preview, preset_availability, preview, to_yaml
from claims.requests.quota import check_quota
from claims.requests.services import default_lease, release_request, renew_request, submit_request
from claims.requests.specs import PRESETS, SpecErrors
from claims.tables import ClaimRequestTable, request_state_badge
from devices.models import Pod
from portal.models import AuditEvent, Quota, Tenant
from toolkit.durations import format_duration, parse_duration
from toolkit.htmx import render_list, render_page, wants_fragment

__all__ = [
    "claimrequest_detail",
    "claimrequest_list",
    "claimrequest_new",
    "claimrequest_preview",
    "claimrequest_release",
    "claimrequest_renew",
]

FORM_TEMPLATE = "claims/claimrequest_form.html"
DETAIL_TEMPLATE = "claims/claimrequest_detail.html"
RELEASE_TEMPLATE = "claims/claimrequest_release.html"


def _hx_redirect(request: HttpRequest, url: str) -> HttpResponse:
    """After a successful POST: ``HX-Location`` for htmx, a plain redirect otherwise."""
    if wants_fragment(request):
        response = HttpResponse(status=204)
        response["HX-Location"] = url
        return response
    return redirect(url)


@login_required
def claimrequest_list(request: HttpRequest) -> HttpResponse:
    visible = ClaimRequest.objects.visible_to(request.user)

    def filter_choices() -> dict[str, Any]:
        namespaces = visible.order_by("namespace").values_list("namespace", flat=True)
        return {"namespace": ("All namespaces", list(namespaces.distinct()))}

    return render_list(
        request,
        filterset=ClaimRequestFilterSet(request.GET, queryset=visible),
        table_class=ClaimRequestTable,
        template="claims/claimrequest_list.html",
        fragment="claimrequest-table",
        filter_choices=filter_choices,
    )


def _lease_hint(form: ClaimRequestForm, device_class: str) -> str:
    """What an empty lease means for the namespace's tenant and the class chosen: the lease
    it gets (``claims.requests.services.default_lease``) and whether a longer one waits for
    approval."""
    # (namespace, label) pairs: the list the form's __init__ offers.
    choices = cast("list[tuple[str, str]]", form.namespace_field.choices)
    namespace = form.data.get("namespace") or form.initial.get("namespace") or ""
    if not namespace and choices:
        namespace = choices[0][0]  # what the browser shows selected
    tenant = form.namespace_tenants.get(namespace)
    if tenant is None or not device_class:
        return str(form.fields["lease"].help_text)
    quota = Quota.objects.filter(tenant=tenant, device_class_name=device_class).first()
    lease = default_lease(quota)
    if quota is None or lease is None:
        return "Empty: no lease (held until released)."
    text = f"Empty: {format_duration(lease)}."
    if quota.approve_above_lease is not None:
        text += (
            f" A lease longer than {format_duration(quota.approve_above_lease)} waits for "
            f"approval by {tenant.name}'s admins"
        )
        if quota.max_lease is not None and quota.max_lease > quota.approve_above_lease:
            text += f" (at most {format_duration(quota.max_lease)})"
        return text + "."
    return text[:-1] + f", the longest {tenant.name}'s quota allows."


def _form_context(form: ClaimRequestForm, result: Preview | None) -> dict[str, Any]:
    device_class = form.data.get("device_class") or form.initial.get("device_class") or ""
    availability = preset_availability(device_class)
    return {
        "lease_hint": _lease_hint(form, device_class),
        "form": form,
        "preview": result,
        "presets": [
            {"key": "", "label": "None", "reason": ""},
            *(
                {"key": key, "label": label, "reason": availability.get(key, "")}
                for key, (label, _) in PRESETS.items()
            ),
        ],
        "alternative_rows": [
            (form[f"alt{n}_device_class"], form[f"alt{n}_count"], form[f"alt{n}_selectors"])
            for n in range(1, ALTERNATIVE_ROWS + 1)
        ],
        "class_modes": form.class_modes,
    }


def _preview_of(form: ClaimRequestForm) -> Preview | None:
    claim = form.partial_claim_input()
    return None if claim is None else preview(form.user, claim)


@login_required
def claimrequest_new(request: HttpRequest) -> HttpResponse:
    """GET: the empty form. POST: submit; errors come back on the form (422), nothing made."""
    if request.method != "POST":
        initial = {"namespace": request.GET.get("namespace", ""), "device_class": ""}
        form = ClaimRequestForm(user=request.user, initial=initial)
        return render_page(request, FORM_TEMPLATE, "claim-preview", _form_context(form, None))
    form = ClaimRequestForm(request.POST, user=request.user)
    if form.is_valid():
        try:
            created = submit_request(
                user=request.user,
                claim=form.to_claim_input(),
                idempotency_key=form.cleaned_data.get("idempotency_key", ""),
            )
        except SpecErrors as error:
            form.add_spec_errors(error.errors)
        else:
            if created.state == ClaimRequest.State.PENDING_APPROVAL:
                messages.info(
                    request,
                    f"Claim {created} is waiting for approval by your tenant's admins: "
                    "nothing is allocated until then.",
                )
            else:
                messages.success(request, f"Claim {created} requested.")
            return _hx_redirect(request, created.get_absolute_url())
    bound = ClaimRequestForm(request.POST, user=request.user)
    return render_page(
        request,
        FORM_TEMPLATE,
        "claim-preview",
        _form_context(form, _preview_of(bound)),
        status=422,
    )


@login_required
def claimrequest_preview(request: HttpRequest) -> HttpResponse:
    """The preview panel for the form's current values (htmx, while typing); the whole form
    page with that preview otherwise."""
    data = request.POST if request.method == "POST" else request.GET
    form = ClaimRequestForm(data, user=request.user)
    result = _preview_of(form)
    return render_page(request, FORM_TEMPLATE, "claim-preview", _form_context(form, result))


def _allocations(
    claim_request: ClaimRequest, mirrored: ResourceClaim | None
) -> list[dict[str, Any]]:
    """The devices held: the mirrored claim's results (linked to their devices), else the
    allocation the portal wrote (reservations the mirror does not show yet); an ended request
    holds nothing."""
    if not claim_request.is_active:
        return []
    if mirrored is not None and mirrored.is_allocated:
        return [
            {
                "request": result.request,
                "driver": result.driver,
                "pool": result.pool,
                "device": result.device_name,
                "url": result.device.get_absolute_url() if result.device else "",
                "admin_access": result.admin_access,
                "mirrored": True,
            }
            for result in mirrored.allocated_devices.select_related("device")
        ]
    results = ((claim_request.allocation or {}).get("devices") or {}).get("results") or []
    return [
        {
            "request": result.get("request", ""),
            "driver": result.get("driver", ""),
            "pool": result.get("pool", ""),
            "device": result.get("device", ""),
            "url": reverse(
                "device-detail",
                kwargs={
                    "driver": result.get("driver", ""),
                    "pool": result.get("pool", ""),
                    "device": result.get("device", ""),
                },
            ),
            "admin_access": bool(result.get("adminAccess")),
            "mirrored": False,
        }
        for result in results
        if result.get("driver") and result.get("pool") and result.get("device")
    ]


def _timeline(claim_request: ClaimRequest, mirrored: ResourceClaim | None) -> list[dict[str, Any]]:
    """The audit trail of the request, plus what the mirror saw, oldest first."""
    events: list[dict[str, Any]] = []
    pending = ClaimRequest.State.PENDING_APPROVAL
    for event in AuditEvent.objects.filter(
        object_type=ClaimRequest._meta.label, object_id=str(claim_request.pk)
    ).order_by("created_at", "pk"):
        after = event.after or {}
        before = event.before or {}
        if (
            event.action == AuditEvent.Action.CLAIM_STATE
            and before.get("state") == pending
            and after.get("state") in (ClaimRequest.State.SUBMITTED, ClaimRequest.State.DENIED)
        ):
            continue  # the approval or denial below says it, with its comment
        if event.action == AuditEvent.Action.CLAIM_REQUESTED and after.get("approval_reasons"):
            text = "requested; waits for approval: " + " ".join(after["approval_reasons"])
        elif event.action == AuditEvent.Action.RENEWAL_REQUESTED:
            text = f"renewal to {after.get('lease', '?')} requested; waits for approval: " + (
                " ".join(after.get("approval_reasons") or [])
            )
        elif event.action == AuditEvent.Action.RENEWAL_EXPIRED:
            text = f"renewal dropped: {after.get('reason', 'not decided in time')}"
        elif event.action in (AuditEvent.Action.CLAIM_APPROVED, AuditEvent.Action.CLAIM_DENIED):
            verb = "approved" if event.action == AuditEvent.Action.CLAIM_APPROVED else "denied"
            if after.get("renewal"):
                verb = f"renewal to {after.get('lease', '?')} {verb}"
            text = verb + (f": “{after['comment']}”" if after.get("comment") else "")
        elif event.action == AuditEvent.Action.CLAIM_STATE:
            text = f"{before.get('state', '?')} → {after.get('state', '?')}"
            if after.get("reason"):
                text += f": {after['reason']}"
        elif event.action == AuditEvent.Action.CLAIM_CONFLICT and after.get("summary"):
            text = after["summary"]
        elif event.action == AuditEvent.Action.CLAIM_RENEWED:
            text = f"lease renewed until {after.get('expires_at', '?')}"
        else:
            text = event.get_action_display()
        events.append({"at": event.created_at, "actor": event.actor_name, "text": text})
    if mirrored is not None and mirrored.created_at:
        events.append(
            {"at": mirrored.created_at, "actor": "cluster", "text": "claim created in the cluster"}
        )
    # The cluster stamps whole seconds: its event goes after the portal's of the same second
    # (the portal's write caused it), not before them.
    events.sort(key=lambda event: (event["at"].replace(microsecond=0), event["actor"] == "cluster"))
    return events


def _manifest(claim_request: ClaimRequest) -> str:
    """The object applying the request creates, as the apply writes it."""
    return to_yaml(manifest_document(claim_request))


def _may_change(request: HttpRequest, claim_request: ClaimRequest) -> bool:
    user = request.user
    return bool(
        user.is_staff
        or claim_request.requested_by_id == user.pk
        or Tenant.objects.administered_by(user).filter(pk=claim_request.tenant_id).exists()
    )


@login_required
def claimrequest_detail(request: HttpRequest, pk: Any) -> HttpResponse:
    claim_request = get_request_for_user(request.user, pk)
    mirrored = ResourceClaim.objects.filter(
        tenant=claim_request.tenant, namespace=claim_request.namespace, name=claim_request.name
    ).first()
    consumers = list(mirrored.consumers.all()) if mirrored is not None else []
    pods = {
        pod.name: pod
        for pod in Pod.objects.filter(
            namespace=claim_request.namespace, name__in=[c.name for c in consumers]
        )
    }
    may_change = _may_change(request, claim_request)
    release_blocked = ""
    if consumers:
        names = ", ".join(c.name for c in consumers[:5])
        release_blocked = f"Pods use this claim ({names}): delete them first."
    quota = Quota.objects.filter(
        tenant=claim_request.tenant, device_class_name=claim_request.device_class_name
    ).first()
    is_pending = claim_request.state == ClaimRequest.State.PENDING_APPROVAL
    renewal_waits = not is_pending and claim_request.has_pending_renewal
    approval: dict[str, Any] = {}
    if claim_request.awaits_approval:
        approval = {
            "deadline": approval_deadline(claim_request),
            "may_decide": may_decide(request.user, claim_request),
        }
        if is_pending and approval["may_decide"]:
            approval["check"] = check_quota(
                claim_request.tenant,
                claim_request.device_class_name,
                devices=claim_request.held_devices,
                memory_bytes=claim_request.held_memory_bytes,
            )
    context: dict[str, Any] = {
        "claim_request": claim_request,
        "state_badge": request_state_badge(claim_request),
        "mirrored": mirrored,
        "allocations": _allocations(claim_request, mirrored),
        "consumers": [{"consumer": c, "pod": pods.get(c.name)} for c in consumers],
        # What waits for approval may wait for days: no polling (it would also wipe a
        # comment being typed into the approval form).
        "is_live": claim_request.is_active and not claim_request.awaits_approval,
        "is_pending": is_pending,
        "renewal_waits": renewal_waits,
        "renewal_lease_text": format_duration(claim_request.renewal_lease)
        if claim_request.renewal_lease
        else "",
        "approval": approval,
        "may_decide": bool(approval.get("may_decide")),
        "may_change": may_change,
        "may_force": request.user.is_staff,
        "release_blocked": release_blocked,
        "can_release": claim_request.is_active
        and claim_request.state != ClaimRequest.State.RELEASING,
        "lease_text": format_duration(claim_request.lease) if claim_request.lease else "",
        "max_lease_text": format_duration(quota.max_lease) if quota and quota.max_lease else "",
    }
    if not wants_fragment(request):
        context |= {
            "timeline": _timeline(claim_request, mirrored),
            "manifest": _manifest(claim_request),
            "form_json": to_yaml(claim_request.form),
            "renew_form": RenewForm(),
        }
    return render_page(request, DETAIL_TEMPLATE, "request-status", context)


def _release_context(request: HttpRequest, claim_request: ClaimRequest) -> dict[str, Any]:
    """What releasing (or withdrawing) ``claim_request`` would free, for the confirmation."""
    mirrored = ResourceClaim.objects.filter(
        tenant=claim_request.tenant, namespace=claim_request.namespace, name=claim_request.name
    ).first()
    consumers = list(mirrored.consumers.values_list("name", flat=True)) if mirrored else []
    force = (request.POST or request.GET).get("force") == "1" and request.user.is_staff
    allocations = _allocations(claim_request, mirrored)
    return {
        "claim_request": claim_request,
        "state_badge": request_state_badge(claim_request),
        "is_pending": claim_request.state == ClaimRequest.State.PENDING_APPROVAL,
        "can_release": claim_request.is_active
        and claim_request.state != ClaimRequest.State.RELEASING,
        "allocations": allocations,
        "nodes": sorted({device["pool"] for device in allocations}),
        "consumers": consumers,
        "force": force,
        "blocked": bool(consumers) and not force,
        "may_force": request.user.is_staff,
    }


@login_required
def claimrequest_release(request: HttpRequest, pk: Any) -> HttpResponse:
    """GET (or a POST without ``confirm=yes``): what releasing the claim would free — or, for a
    request waiting for approval, that withdrawing it drops the request — and a form to confirm
    it (htmx: the panel on the request's page; otherwise a page). Nothing is released on one
    click. POST with ``confirm=yes``: release (``force=1``: portal admins, even while pods use
    it) or withdraw."""
    if request.method not in ("GET", "POST"):
        return HttpResponseNotAllowed(["GET", "POST"])
    claim_request = get_request_for_user(request.user, pk, write=True)
    if request.method == "GET" or request.POST.get("confirm") != "yes":
        return render_page(
            request, RELEASE_TEMPLATE, "release-confirm", _release_context(request, claim_request)
        )
    force = request.POST.get("force") == "1" and request.user.is_staff
    was_pending = claim_request.state == ClaimRequest.State.PENDING_APPROVAL
    try:
        release_request(user=request.user, request=claim_request, force=force)
    except SpecErrors as error:
        for problems in error.errors.values():
            for problem in problems:
                messages.error(request, problem)
    else:
        messages.success(
            request, f"Withdrew {claim_request}." if was_pending else f"Releasing {claim_request}."
        )
    return _hx_redirect(request, claim_request.get_absolute_url())


@login_required
@require_POST
def claimrequest_renew(request: HttpRequest, pk: Any) -> HttpResponse:
    claim_request = get_request_for_user(request.user, pk, write=True)
    form = RenewForm(request.POST)
    if not form.is_valid():
        for field_errors in form.errors.values():
            # An ErrorList yields its messages as strings (its __getitem__ unwraps each
            # ValidationError); the stubs type the items as they are stored.
            for message in cast("list[str]", field_errors):
                messages.error(request, message)
        return _hx_redirect(request, claim_request.get_absolute_url())
    lease = parse_duration(form.cleaned_data["lease"]) if form.cleaned_data["lease"] else None
    try:
        renew_request(user=request.user, request=claim_request, lease=lease)
    except SpecErrors as error:
        for problems in error.errors.values():
            for problem in problems:
                messages.error(request, problem)
    else:
        if claim_request.has_pending_renewal:
            asked = claim_request.renewal_lease
            messages.info(
                request,
                f"The renewal of {claim_request} to "
                f"{format_duration(asked) if asked else 'no lease'} waits for approval by your "
                "tenant's admins; the current lease runs on until they decide.",
            )
        else:
            messages.success(request, f"Lease of {claim_request} renewed.")
    return _hx_redirect(request, claim_request.get_absolute_url())
