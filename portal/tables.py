"""Tables of the tenancy pages (STYLE §6)."""

import django_tables2 as tables

from portal.models import AuditEvent, Tenant

__all__ = ["AuditEventTable", "TenantTable"]


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
