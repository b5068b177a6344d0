"""Django admin for the tenancy domain.

Tenants, namespaces, memberships and quotas are written through ``portal.services.tenants``,
like the API and the pages: same validation, same row locks, same audit events.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.forms import BaseInlineFormSet, ModelForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils import timezone

from portal.forms import DurationTextField, QuantityField
from portal.models import (
    ApiToken,
    AuditEvent,
    ExternalIdentity,
    IdlePolicy,
    Membership,
    Quota,
    Tenant,
    TenantNamespace,
)
from portal.services import tenants as tenant_services
from portal.services.audit import record_event
from portal.services.idle_policies import (
    IDLE_POLICY_FIELDS,
    delete_idle_policy,
    save_idle_policy,
)
from portal.services.tenants import QUOTA_FIELDS


class QuotaForm(ModelForm):
    """Shows the services' quota checks (unknown DeviceClass, lease limit) on the form's fields.

    Device memory is typed and shown as a Kubernetes quantity (``640Gi``), leases as durations
    (``7d``, ``12h``; ISO 8601 and Django's ``7 00:00:00`` are accepted too)."""

    max_device_memory = QuantityField(
        label="Max device memory", help_text="Sum of the devices' memory, e.g. 640Gi."
    )
    max_lease = DurationTextField(label="Max lease", help_text="e.g. 7d or 12h.")
    approve_above_memory = QuantityField(
        label="Approve above memory", help_text="Requests for more memory wait for approval."
    )
    approve_above_lease = DurationTextField(
        label="Approve above lease", help_text="Requests for a longer lease wait for approval."
    )

    class Meta:
        model = Quota
        fields = ["tenant", *QUOTA_FIELDS]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # ModelForm.clean answers cleaned_data
        try:
            tenant_services.validate_quota(
                device_class_name=cleaned.get("device_class_name") or "",
                max_lease=cleaned.get("max_lease"),
            )
        except ValidationError as error:
            # The model form's own error path (its fields' messages); django-stubs omit it.
            self._update_errors(error)  # type: ignore[attr-defined]
        return cleaned


def _limits(obj: Quota) -> dict[str, Any]:
    """Every limit and approval setting of the quota (``save_quota`` resets what it is not
    given)."""
    return {
        name: getattr(obj, name)
        for name in tenant_services.QUOTA_FIELDS
        if name != "device_class_name"
    }


def _adopt(obj: models.Model, saved: models.Model) -> None:
    """Copies the row a service wrote into the admin's instance (redirects and messages use it)."""
    for field in obj._meta.concrete_fields:
        setattr(obj, field.attname, getattr(saved, field.attname))
    obj._state.adding = False


def _existing(obj: models.Model) -> Any:
    """The row as stored, before the admin form's changes; None for a new object."""
    return type(obj)._default_manager.filter(pk=obj.pk).first() if obj.pk else None


class ServiceAdmin(admin.ModelAdmin):
    """An admin whose writes go through ``portal.services.tenants`` (STYLE §4).

    The services take the row locks, validate and record the audit events, exactly as for the
    API and the pages; Django's default ``save_model``/``delete_model`` would write the rows
    directly. Subclasses say how to save and delete one object, and ``save_inline`` handles the
    tenant page's inline rows.
    """

    def save_object(self, request: HttpRequest, obj: Any, previous: Any) -> models.Model:
        raise NotImplementedError

    def delete_object(self, request: HttpRequest, obj: Any) -> None:
        raise NotImplementedError

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return self._refusals_as_messages(request, super().changeform_view, *args, **kwargs)

    def delete_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return self._refusals_as_messages(request, super().delete_view, *args, **kwargs)

    def changelist_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return self._refusals_as_messages(request, super().changelist_view, *args, **kwargs)

    def _refusals_as_messages(
        self, request: HttpRequest, view: Any, *args: Any, **kwargs: Any
    ) -> HttpResponse:
        """A service's refusal found only while saving (the last tenant admin removed or
        demoted) rolls the whole change back and is shown as a message on the same page."""
        try:
            response: HttpResponse = view(request, *args, **kwargs)
        except ValidationError as error:
            self.message_user(request, " ".join(error.messages), level=messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())
        return response

    def save_model(self, request: HttpRequest, obj: Any, form: ModelForm, change: bool) -> None:
        with transaction.atomic():
            _adopt(obj, self.save_object(request, obj, _existing(obj) if change else None))

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.delete_object(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: models.QuerySet) -> None:
        with transaction.atomic():
            for obj in queryset:
                self.delete_object(request, obj)


def _save_quota(request: HttpRequest, obj: Quota, previous: Quota | None) -> Quota:
    return tenant_services.save_quota(
        actor=request.user,
        tenant=obj.tenant,
        device_class_name=obj.device_class_name,
        previous=previous,
        **_limits(obj),
    )


def _save_membership(
    request: HttpRequest, obj: Membership, previous: Membership | None
) -> Membership:
    if previous is not None and (previous.user_id, previous.tenant_id) != (
        obj.user_id,
        obj.tenant_id,
    ):
        tenant_services.remove_member(actor=request.user, membership=previous)
    return tenant_services.set_member(
        actor=request.user, tenant=obj.tenant, user=obj.user, role=Membership.Role(obj.role)
    )


class TenantNamespaceInline(admin.TabularInline):
    model = TenantNamespace
    extra = 1


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]
    readonly_fields = ["source"]  # set by who adds it: the portal, or single sign-on


class QuotaInline(admin.TabularInline):
    model = Quota
    form = QuotaForm
    extra = 1


@admin.register(Tenant)
class TenantAdmin(ServiceAdmin):
    list_display = ["name", "slug", "namespace_list", "member_count", "requires_approval"]
    list_filter = ["requires_approval"]
    search_fields = ["name", "slug", "namespaces__name", "memberships__user__username"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [TenantNamespaceInline, MembershipInline, QuotaInline]
    # The webhook is set on its own page, through the service that checks its address and
    # gives it a secret (notifications.services.set_webhook_url).
    exclude = ["webhook_url", "webhook_secret"]

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

    def save_object(self, request: HttpRequest, obj: Tenant, previous: Tenant | None) -> Tenant:
        fields = {name: getattr(obj, name) for name in tenant_services.TENANT_FIELDS}
        return tenant_services.save_tenant(actor=request.user, tenant=previous, **fields)

    def delete_object(self, request: HttpRequest, obj: Tenant) -> None:
        tenant_services.delete_tenant(actor=request.user, tenant=obj)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[Any, ...]:
        """The confirmation page (one tenant, or the bulk action) says, with the service's
        words, why a tenant cannot be deleted instead of listing each protected row; the
        admin then refuses the deletion, as the service would."""
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        refusals = [r for r in map(tenant_services.deletion_refusal, objs) if r is not None]
        if refusals:
            # Shown instead of the rows the admin could not delete (the claim requests).
            return deleted, counts, set(), refusals
        return deleted, counts, perms_needed, protected

    def save_formset(
        self, request: HttpRequest, form: ModelForm, formset: BaseInlineFormSet, change: bool
    ) -> None:
        """Applies the inline rows through the services, and tells the admin's change message
        what changed (``formset.save()`` would have recorded it)."""
        tenant: Tenant = form.instance
        deleted = [f.instance for f in formset.deleted_forms if f.instance.pk]
        changed = [f for f in formset.forms if f.has_changed() and f not in formset.deleted_forms]
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], deleted
        with transaction.atomic():
            if formset.model is TenantNamespace and (changed or deleted):
                names = [
                    f.cleaned_data["name"]
                    for f in formset.forms
                    if f not in formset.deleted_forms and f.cleaned_data.get("name")
                ]
                tenant_services.set_tenant_namespaces(
                    actor=request.user, tenant=tenant, namespaces=names
                )
                saved = {n.name: n for n in TenantNamespace.objects.filter(tenant=tenant)}
                for inline_form in changed:
                    inline_form.instance = saved[inline_form.cleaned_data["name"]]
            elif formset.model is not TenantNamespace:
                for obj in deleted:
                    if isinstance(obj, Quota):
                        tenant_services.delete_quota(actor=request.user, quota=obj)
                    else:
                        tenant_services.remove_member(actor=request.user, membership=obj)
                for inline_form in changed:
                    obj = inline_form.instance
                    obj.tenant = tenant
                    previous = _existing(obj)
                    save = _save_quota if isinstance(obj, Quota) else _save_membership
                    inline_form.instance = save(request, obj, previous)
            for inline_form in changed:
                if inline_form.initial and inline_form.instance.pk:
                    formset.changed_objects.append((inline_form.instance, inline_form.changed_data))
                else:
                    formset.new_objects.append(inline_form.instance)


class IdlePolicyForm(ModelForm):
    """Durations typed as ``24h`` or ``2d``; blank fields follow the portal's defaults."""

    grace_period = DurationTextField(label="Grace period", help_text="e.g. 24h; blank: default.")
    no_consumer_after = DurationTextField(
        label="No consumer after", help_text="e.g. 2h; blank: default."
    )
    low_utilisation_after = DurationTextField(
        label="Low utilisation after", help_text="e.g. 4h; blank: default."
    )

    class Meta:
        model = IdlePolicy
        fields = ["tenant", *IDLE_POLICY_FIELDS]


@admin.register(IdlePolicy)
class IdlePolicyAdmin(ServiceAdmin):
    form = IdlePolicyForm
    list_display = ["tenant", "reclaim", "grace_period", "no_consumer_after", "updated_at"]
    list_filter = ["reclaim"]
    list_select_related = ["tenant"]
    search_fields = ["tenant__name"]

    def save_object(
        self, request: HttpRequest, obj: IdlePolicy, previous: IdlePolicy | None
    ) -> IdlePolicy:
        fields = {name: getattr(obj, name) for name in IDLE_POLICY_FIELDS}
        return save_idle_policy(actor=request.user, tenant=obj.tenant, **fields)

    def delete_object(self, request: HttpRequest, obj: IdlePolicy) -> None:
        delete_idle_policy(actor=request.user, policy=obj)


@admin.register(Quota)
class QuotaAdmin(ServiceAdmin):
    form = QuotaForm
    list_display = [
        "tenant",
        "device_class_name",
        "in_cluster",
        "max_devices",
        "max_device_memory",
        "max_claims",
        "max_lease",
    ]
    list_filter = ["device_class_name", "tenant"]
    search_fields = ["tenant__name", "device_class_name"]
    list_select_related = ["tenant"]

    def get_queryset(self, request: HttpRequest) -> models.QuerySet[Quota]:
        return super().get_queryset(request).with_cluster_presence()  # type: ignore[attr-defined]

    @admin.display(description="In cluster", boolean=True, ordering="device_class_in_cluster")
    def in_cluster(self, obj: Quota) -> bool:
        """False: the mirror has no DeviceClass of this name ("class not in cluster")."""
        return bool(getattr(obj, "device_class_in_cluster", False))

    def save_object(self, request: HttpRequest, obj: Quota, previous: Quota | None) -> Quota:
        return _save_quota(request, obj, previous)

    def delete_object(self, request: HttpRequest, obj: Quota) -> None:
        tenant_services.delete_quota(actor=request.user, quota=obj)


@admin.register(Membership)
class MembershipAdmin(ServiceAdmin):
    list_display = ["user", "tenant", "role", "source", "created_at"]
    list_filter = ["role", "source", "tenant"]
    readonly_fields = ["source"]
    search_fields = ["user__username", "user__email", "tenant__name"]
    autocomplete_fields = ["user"]
    list_select_related = ["user", "tenant"]

    def save_object(
        self, request: HttpRequest, obj: Membership, previous: Membership | None
    ) -> Membership:
        return _save_membership(request, obj, previous)

    def delete_object(self, request: HttpRequest, obj: Membership) -> None:
        tenant_services.remove_member(actor=request.user, membership=obj)


@admin.register(ExternalIdentity)
class ExternalIdentityAdmin(admin.ModelAdmin):
    """Single sign-on links are made by signing in; an admin may only see them and delete one
    (the provider account then signs in as a new user, or is refused if the username is
    taken: docs/sign-in.md)."""

    list_display = ["user", "subject", "issuer", "last_sign_in"]
    search_fields = ["user__username", "subject"]
    readonly_fields = ["user", "issuer", "subject", "groups", "last_sign_in"]
    list_select_related = ["user"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: ExternalIdentity) -> None:
        with transaction.atomic():
            record_event(
                actor=request.user,
                action=AuditEvent.Action.DELETED,
                obj=obj,
                before={
                    "user": obj.user.get_username(),
                    "issuer": obj.issuer,
                    "subject": obj.subject,
                },
            )
            obj.delete()

    def delete_queryset(
        self, request: HttpRequest, queryset: models.QuerySet[ExternalIdentity]
    ) -> None:
        for identity in queryset.select_related("user"):
            self.delete_model(request, identity)


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
