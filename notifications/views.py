"""Notification pages (thin: parse → gate → service → respond, STYLE §5).

* ``/account/notifications/``: which events the user gets by email, and what they were sent.
* ``/tenants/<slug>/webhook/``: a tenant's webhook (tenant admins and portal admins): its URL,
  its secret (masked; a new one is shown once), a test event, and the recent deliveries. One URL
  for every action (``action=save|rotate|test|remove``), so the page gates them all alike.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from notifications.filtersets import WebhookDeliveryFilterSet
from notifications.forms import PreferencesForm, WebhookForm
from notifications.models import Event, Notification, NotificationPreference
from notifications.services import lease_lead, save_preferences
from notifications.tables import WebhookDeliveryTable
from notifications.tenant_webhooks import (
    remove_webhook,
    rotate_webhook_secret,
    send_test_event,
    set_webhook_url,
)
from portal.access import get_tenant_for_user
from portal.models import Tenant
from toolkit.durations import format_duration
from toolkit.htmx import render_list

__all__ = ["notification_preferences", "tenant_webhook"]

RECENT = 25


@login_required
def notification_preferences(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = PreferencesForm(request.POST)
        if form.is_valid():
            save_preferences(user=request.user, email=form.email_choices())  # type: ignore[arg-type]
            messages.success(request, "Your notification choices are saved.")
            return redirect("notification-preferences")
    choices = NotificationPreference.objects.email_choices(request.user)  # type: ignore[arg-type]
    context = {
        "events": [
            {
                "value": event.value,
                "label": event.label,
                "description": event.description,
                "email": choices[event],
            }
            for event in Event
        ],
        "notifications": Notification.objects.for_user(request.user)[:RECENT],  # type: ignore[arg-type]
        "lease_lead": format_duration(lease_lead()),
        "has_email": bool(getattr(request.user, "email", "")),
    }
    return render(request, "notifications/notification_preferences.html", context)


def _masked(secret: str) -> str:
    return "•" * 12 + secret[-4:] if secret else ""


def _webhook_action(
    request: HttpRequest, tenant: Tenant, form: WebhookForm
) -> tuple[HttpResponse | None, str, list[str]]:
    """Runs the POSTed action: a redirect when done, or (None, new secret, errors of an action
    other than saving the URL) to render the page with."""
    action = request.POST.get("action", "save")
    user: Any = request.user
    try:
        if action == "rotate":
            tenant, secret = rotate_webhook_secret(actor=user, tenant=tenant)
            messages.success(request, "New secret set: update your receiver with it now.")
            return None, secret, []
        if action == "test":
            send_test_event(actor=user, tenant=tenant)
            messages.success(request, "Test event queued; its delivery is listed below.")
            return redirect("tenant-webhook", slug=tenant.slug), "", []
        if action == "remove":
            remove_webhook(actor=user, tenant=tenant)
            messages.success(request, "Webhook removed: nothing more is sent to it.")
            return redirect("tenant-webhook", slug=tenant.slug), "", []
        if form.is_valid():
            tenant, secret = set_webhook_url(
                actor=user, tenant=tenant, url=form.cleaned_data["url"]
            )
            messages.success(request, "Webhook saved.")
            if secret:
                return None, secret, []
            return redirect("tenant-webhook", slug=tenant.slug), "", []
    except ValidationError as error:
        if action != "save":
            return None, "", error.messages
        for problem in error.messages:
            form.add_error("url", problem)
    return None, "", []


@login_required
def tenant_webhook(request: HttpRequest, slug: str) -> HttpResponse:
    tenant = get_tenant_for_user(request.user, slug, write=True)
    form = WebhookForm(initial={"url": tenant.webhook_url})
    new_secret = ""
    action_errors: list[str] = []
    if request.method == "POST":
        form = WebhookForm(request.POST) if request.POST.get("action", "save") == "save" else form
        done, new_secret, action_errors = _webhook_action(request, tenant, form)
        if done is not None:
            return done
        tenant.refresh_from_db()
    response = render_list(
        request,
        filterset=WebhookDeliveryFilterSet(request.GET, queryset=tenant.webhook_deliveries.all()),
        table_class=WebhookDeliveryTable,
        template="notifications/tenant_webhook.html",
        fragment="delivery-table",
        default_per_page=25,
        context={
            "tenant": tenant,
            "form": form,
            "new_secret": new_secret,
            "masked_secret": _masked(tenant.webhook_secret),
            "action_errors": action_errors,
        },
    )
    if action_errors or (form.is_bound and form.errors):
        response.status_code = 422
    return response
