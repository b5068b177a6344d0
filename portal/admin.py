"""Django admin for the tenancy domain. Every change made here lands in the audit trail."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db import models, transaction
from django.forms import BaseInlineFormSet, ModelForm
from django.http import HttpRequest
from django.utils import timezone

from portal.models import ApiToken, AuditEvent, Membership, Quota, Tenant, TenantNamespace
from portal.services.audit import record_event, snapshot


def _tenant_of(obj: models.Model) -> Tenant | None:
    if isinstance(obj, Tenant):
        return obj
    return getattr(obj, "tenant", None)


class AuditedAdmin(admin.ModelAdmin):
    """Records an audit event for each save and delete, with the values before and after."""

    def save_model(self, request: HttpRequest, obj: Any, form: ModelForm, change: bool) -> None:
        with transaction.atomic():
            before = snapshot(type(obj).objects.get(pk=obj.pk)) if change else None
            super().save_model(request, obj, form, change)
            after = snapshot(obj)
            if before != after:
                record_event(
                    actor=request.user,
                    action=AuditEvent.Action.UPDATED if change else AuditEvent.Action.CREATED,
                    obj=obj,
                    tenant=_tenant_of(obj),
                    before=before,
                    after=after,
                )

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        with transaction.atomic():
            record_event(
                actor=request.user,
                action=AuditEvent.Action.DELETED,
                obj=obj,
                tenant=_tenant_of(obj),
                before=snapshot(obj),
            )
            super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: models.QuerySet) -> None:
        for obj in queryset:
            self.delete_model(request, obj)

    def save_formset(
        self, request: HttpRequest, form: ModelForm, formset: BaseInlineFormSet, change: bool
    ) -> None:
        with transaction.atomic():
            for deleted in formset.deleted_forms:
                if deleted.instance.pk:
                    record_event(
                        actor=request.user,
                        action=AuditEvent.Action.DELETED,
                        obj=deleted.instance,
                        tenant=_tenant_of(deleted.instance),
                        before=snapshot(deleted.instance),
                    )
            changed = [
                f for f in formset.forms if f.has_changed() and f not in formset.deleted_forms
            ]
            befores = {
                f.instance.pk: snapshot(type(f.instance).objects.get(pk=f.instance.pk))
                for f in changed
                if f.instance.pk
            }
            super().save_formset(request, form, formset, change)
            for inline_form in changed:
                obj = inline_form.instance
                if obj.pk is None:
                    continue
                before = befores.get(obj.pk)
                record_event(
                    actor=request.user,
                    action=AuditEvent.Action.UPDATED if before else AuditEvent.Action.CREATED,
                    obj=obj,
                    tenant=_tenant_of(obj),
                    before=before,
                    after=snapshot(obj),
                )


class TenantNamespaceInline(admin.TabularInline):
    model = TenantNamespace
    extra = 1


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


class QuotaInline(admin.TabularInline):
    model = Quota
    extra = 1


@admin.register(Tenant)
class TenantAdmin(AuditedAdmin):
    list_display = ["name", "slug", "namespace_list", "member_count", "requires_approval"]
    list_filter = ["requires_approval"]
    search_fields = ["name", "slug", "namespaces__name", "memberships__user__username"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [TenantNamespaceInline, MembershipInline, QuotaInline]

    def get_queryset(self, request: HttpRequest) -> models.QuerySet[Tenant]:
        return (
            super()
            .get_queryset(request)
            .prefetch_related("namespaces")
            .annotate(members=models.Count("memberships", distinct=True))
        )

    @admin.display(description="Namespaces")
    def namespace_list(self, obj: Tenant) -> str:
        return ", ".join(obj.namespace_names) or "—"

    @admin.display(description="Members", ordering="members")
    def member_count(self, obj: Tenant) -> int:
        return obj.members  # type: ignore[attr-defined]


@admin.register(Quota)
class QuotaAdmin(AuditedAdmin):
    list_display = [
        "tenant",
        "device_class_name",
        "max_devices",
        "max_device_memory",
        "max_claims",
        "max_lease",
    ]
    list_filter = ["device_class_name", "tenant"]
    search_fields = ["tenant__name", "device_class_name"]
    list_select_related = ["tenant"]


@admin.register(Membership)
class MembershipAdmin(AuditedAdmin):
    list_display = ["user", "tenant", "role", "created_at"]
    list_filter = ["role", "tenant"]
    search_fields = ["user__username", "user__email", "tenant__name"]
    autocomplete_fields = ["user"]
    list_select_related = ["user", "tenant"]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "actor_name", "action", "object_type", "object_repr", "tenant"]
    list_filter = ["action", "object_type", "tenant"]
    search_fields = ["actor_name", "object_repr", "object_id"]
    date_hierarchy = "created_at"
    list_select_related = ["tenant"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are issued by their users; admins can only see and revoke them."""

    list_display = [
        "name",
        "user",
        "prefix",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["revoked_at"]
    search_fields = ["name", "user__username", "prefix"]
    readonly_fields = [
        "user",
        "name",
        "prefix",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ]
    exclude = ["token_hash"]
    actions = ["revoke"]
    list_select_related = ["user"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: models.QuerySet[ApiToken]) -> None:
        with transaction.atomic():
            for token in queryset.filter(revoked_at__isnull=True):
                token.revoked_at = timezone.now()
                token.save(update_fields=["revoked_at"])
                record_event(
                    actor=request.user,
                    action=AuditEvent.Action.TOKEN_REVOKED,
                    obj=token,
                    before={"revoked_at": None},
                    after={"revoked_at": token.revoked_at.isoformat()},
                )
        messages.success(request, "Tokens revoked.")
