"""Tables of the tenancy pages (STYLE §6)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import django_tables2 as tables
from django.apps import apps
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

from portal.models import AuditEvent, Tenant

__all__ = [
    "AUDIT_OBJECT_PAGES",
    "AuditEventTable",
    "AuditLogTable",
    "TenantTable",
    "audit_changes",
    "object_type_name",
]


class TenantTable(tables.Table):
    name = tables.Column(linkify=True)
    # Named explicitly: for a reverse relation django-tables2 would take the verbose name of
    # the foreign key on the other side ("tenant").
    namespaces = tables.TemplateColumn(
        template_name="portal/includes/namespace_badges.html",
        verbose_name="Namespaces",
        orderable=False,
    )
    member_count = tables.Column(verbose_name="Members", attrs={"td": {"class": "text-end"}})
    quota_count = tables.Column(verbose_name="Quotas", attrs={"td": {"class": "text-end"}})
    requires_approval = tables.BooleanColumn(verbose_name="Approval")

    class Meta:
        model = Tenant
        fields = ["name", "slug", "namespaces", "member_count", "quota_count", "requires_approval"]
        attrs = {"class": "table table-hover align-middle mb-0"}
        empty_text = "No tenants yet."


class AuditEventTable(tables.Table):
    created_at = tables.DateTimeColumn(format="Y-m-d H:i", verbose_name="When")
    actor_name = tables.Column(verbose_name="Who", default="system")
    action = tables.Column(verbose_name="What")
    object_type = tables.Column(verbose_name="Kind")
    object_repr = tables.Column(verbose_name="Object")

    class Meta:
        model = AuditEvent
        fields = ["created_at", "actor_name", "action", "object_type", "object_repr"]
        attrs = {"class": "table table-sm align-middle mb-0"}
        orderable = False
        empty_text = "Nothing has happened yet."


def object_type_name(label: str) -> str:
    """``claims.ClaimRequest`` → "Claim request" (the label itself for a model now gone)."""
    try:
        return str(apps.get_model(label)._meta.verbose_name).capitalize()
    except (LookupError, ValueError):
        return label


def _tenant_page(event: AuditEvent) -> str | None:
    """The event's tenant's page (``tenant`` is select_related by the list: no query)."""
    return event.tenant.get_absolute_url() if event.tenant is not None else None


def _own_page(event: AuditEvent) -> str | None:
    """The object's ``get_absolute_url``, for models whose URL needs only their pk (an unsaved
    instance, no query; ``apps.get_model`` so that the portal imports no app above it)."""
    model = apps.get_model(event.object_type)
    try:
        return str(model(pk=event.object_id).get_absolute_url())
    except NoReverseMatch:
        return None


def _claim_page(event: AuditEvent) -> str | None:
    """A mirrored claim's page, from its ``namespace/name`` (claims are named, not numbered,
    in their URLs; a claim gone since answers 404 there, which says as much)."""
    namespace, _, name = event.object_repr.partition("/")
    if not namespace or not name:
        return None
    try:
        return reverse("resourceclaim-detail", kwargs={"namespace": namespace, "name": name})
    except NoReverseMatch:
        return None


# Where an audited object is shown, by ``object_type``. Quotas and memberships live on their
# tenant's page; a deleted tenant has no page (its events keep ``tenant`` null).
AUDIT_OBJECT_PAGES: dict[str, Callable[[AuditEvent], str | None]] = {
    "portal.Tenant": _tenant_page,
    "portal.Quota": _tenant_page,
    "portal.Membership": _tenant_page,
    "portal.IdlePolicy": _tenant_page,
    "claims.ClaimRequest": _own_page,
    "claims.ResourceClaim": _claim_page,
}

SHORT_VALUE_CHARS = 60


def _short(value: Any, missing: bool = False) -> str:
    if missing:
        return "—"
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= SHORT_VALUE_CHARS else text[: SHORT_VALUE_CHARS - 1] + "…"


def audit_changes(before: Any, after: Any) -> list[tuple[str, str, str]]:
    """``(key, old, new)`` for each top-level key whose value differs between two snapshots,
    values as short JSON ("—" where the key is absent); empty unless both are objects."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return []
    return [
        (key, _short(before.get(key), key not in before), _short(after.get(key), key not in after))
        for key in sorted(set(before) | set(after))
        if key not in before or key not in after or before[key] != after[key]
    ]


def _pretty(value: Any) -> str:
    return "" if value is None else json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


class AuditLogTable(AuditEventTable):
    """The audit log page: the tenant page's columns, plus the tenant, the object linked to
    its page (``AUDIT_OBJECT_PAGES``) and the changes. Expects ``select_related("tenant")``."""

    created_at = tables.DateTimeColumn(
        format="Y-m-d H:i:s", verbose_name="When", attrs={"td": {"class": "text-nowrap"}}
    )
    tenant = tables.Column(verbose_name="Tenant", linkify=True, default="—")
    object_repr = tables.Column(verbose_name="Object", empty_values=())
    changes = tables.Column(verbose_name="Changes", empty_values=(), orderable=False)

    class Meta(AuditEventTable.Meta):
        sequence = [
            "created_at",
            "actor_name",
            "action",
            "tenant",
            "object_type",
            "object_repr",
            "changes",
        ]
        empty_text = "No audit events."

    def render_object_type(self, value: str) -> str:
        return object_type_name(value)

    def render_object_repr(self, record: AuditEvent) -> str:
        name = record.object_repr or record.object_id or "—"
        link = AUDIT_OBJECT_PAGES.get(record.object_type, lambda event: None)(record)
        if link is None:
            return name
        return format_html('<a href="{}">{}</a>', link, name)

    def render_changes(self, record: AuditEvent) -> str:
        return render_to_string(
            "portal/auditevent_list.html#audit-changes",
            {
                "event": record,
                "changes": audit_changes(record.before, record.after),
                "before": _pretty(record.before),
                "after": _pretty(record.after),
            },
        )
