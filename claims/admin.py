"""Django admin for self-service claims.

Class policies are written through ``claims.requests.services`` (audited, like every other write);
claim requests are read-only here but for the *release* actions, which call
:func:`claims.requests.services.release_request` as the API and the pages do, and the *approve*
action (:func:`claims.requests.approvals.approve_request`). Denying needs a reason for the
requester, so it happens on the approvals queue (``/approvals/``) or the request's page, linked from
here.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db import models
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from claims.models import ClaimRequest, ClassPolicy
from claims.requests.approvals import approve_request
from claims.requests.services import delete_class_policy, release_request, save_class_policy
from claims.requests.specs import SpecErrors
from portal.admin import ServiceAdmin
from toolkit.durations import format_duration


@admin.register(ClassPolicy)
class ClassPolicyAdmin(ServiceAdmin):
    list_display = ["device_class_name", "mode", "updated_at"]
    list_filter = ["mode"]
    search_fields = ["device_class_name"]

    def save_object(
        self, request: HttpRequest, obj: ClassPolicy, previous: ClassPolicy | None
    ) -> ClassPolicy:
        return save_class_policy(
            actor=request.user,
            device_class_name=obj.device_class_name,
            mode=obj.mode,
            previous=previous,
        )

    def delete_object(self, request: HttpRequest, obj: ClassPolicy) -> None:
        delete_class_policy(actor=request.user, policy=obj)


@admin.register(ClaimRequest)
class ClaimRequestAdmin(admin.ModelAdmin):
    """Requests are made by their tenants (pages, API, ``manage.py claim``); here they can be
    looked at and released."""

    list_display = [
        "__str__",
        "tenant",
        "device_class_name",
        "count",
        "mode",
        "state",
        "requested_by",
        "decided_by",
        "expires_at",
        "created_at",
    ]
    list_filter = ["state", "mode", "sharing", "tenant", "device_class_name"]
    search_fields = ["namespace", "name", "device_class_name", "requested_by__username"]
    list_select_related = ["tenant", "requested_by", "decided_by"]
    date_hierarchy = "created_at"
    actions = ["approve", "release", "force_release"]
    readonly_fields = ["approval"]

    @admin.display(description="Approval")
    def approval(self, obj: ClaimRequest) -> str:
        """Why it waits (or waited) and the decision, with a link to decide it."""
        reasons = format_html_join("", "<li>{}</li>", ((r,) for r in obj.approval_reasons))
        if obj.state != ClaimRequest.State.PENDING_APPROVAL and obj.has_pending_renewal:
            return format_html(
                "A renewal to {} waits for approval:<ul>{}</ul>"
                '<a href="{}">Approve or deny it on its page</a>',
                format_duration(obj.renewal_lease) if obj.renewal_lease else "no lease",
                format_html_join("", "<li>{}</li>", ((r,) for r in obj.renewal_reasons)),
                obj.get_absolute_url(),
            )
        if obj.state == ClaimRequest.State.PENDING_APPROVAL:
            return format_html(
                '<ul>{}</ul><a href="{}">Approve or deny it on its page</a>',
                reasons,
                obj.get_absolute_url(),
            )
        if obj.decided_at is None:
            return format_html("<ul>{}</ul>", reasons) if obj.approval_reasons else "-"
        return format_html(
            "<ul>{}</ul>{} by {} at {}: {}",
            reasons,
            "Denied" if obj.state == ClaimRequest.State.DENIED else "Approved",
            obj.decided_by or "unknown",
            obj.decided_at,
            obj.decision_comment or "no comment",
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="Devices")
    def count(self, obj: ClaimRequest) -> str:
        return obj.count_label

    def _release(
        self, request: HttpRequest, queryset: models.QuerySet[ClaimRequest], *, force: bool
    ) -> None:
        released, refused = 0, []
        for claim_request in queryset.select_related("tenant"):
            if not claim_request.is_active:
                continue
            try:
                release_request(user=request.user, request=claim_request, force=force)
            except SpecErrors as error:
                refused.append(f"{claim_request}: {error}")
                continue
            released += 1
        if released:
            messages.success(request, f"Releasing {released} request(s).")
        for message in refused:
            messages.error(request, message)

    @admin.action(description="Approve selected requests (or renewals) waiting for approval")
    def approve(self, request: HttpRequest, queryset: models.QuerySet[ClaimRequest]) -> None:
        approved, refused = 0, []
        pending = queryset.awaiting_approval()  # type: ignore[attr-defined]
        for claim_request in pending.select_related("tenant").order_by("created_at"):
            try:
                approve_request(
                    user=request.user, request=claim_request, comment="approved in the admin"
                )
            except SpecErrors as error:
                refused.append(f"{claim_request}: {error}")
                continue
            approved += 1
        if approved:
            messages.success(request, f"Approved {approved} request(s).")
        for message in refused:
            messages.error(request, message)
        if not approved and not refused:
            messages.info(request, "None of the selected requests waits for approval.")

    @admin.action(description="Release selected requests")
    def release(self, request: HttpRequest, queryset: models.QuerySet[ClaimRequest]) -> None:
        self._release(request, queryset, force=False)

    @admin.action(description="Force release (even while pods use the claim)")
    def force_release(self, request: HttpRequest, queryset: models.QuerySet[ClaimRequest]) -> None:
        self._release(request, queryset, force=True)
