"""Tenants and the Kubernetes namespaces they own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.urls import reverse

from portal.models.roles import Role
from portal.models.validators import validate_printable_text
from toolkit.querysets import VisibleQuerySet

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

__all__ = ["Tenant", "TenantNamespace", "TenantQuerySet", "dns_label_validator"]

DESCRIPTION_MAX_CHARS = 2000
# Slugs that name a page under /tenants/ rather than a tenant.
RESERVED_SLUGS = frozenset({"new"})

dns_label_validator = RegexValidator(
    r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
    "Enter a Kubernetes namespace name: up to 63 lowercase letters, digits and '-', "
    "starting and ending with a letter or digit.",
)


class TenantQuerySet(VisibleQuerySet["Tenant"]):
    def visible_to_member(self, user: User) -> Self:
        """Tenants the user may see: all for portal admins (staff), their own for members."""
        return self._with_membership(user=user)

    def administered_by(self, user: User | AnonymousUser) -> TenantQuerySet:
        """Tenants the user may change: all for portal admins, those they are tenant admin of."""
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self.all()
        return self._with_membership(user=user, role=Role.TENANT_ADMIN)

    def _with_membership(self, **membership: object) -> Self:
        """Tenants with a membership matching ``membership``, chosen in a subquery: a join
        would stay on the query and narrow what is later counted over memberships (every
        member) to the viewer's own row."""
        lookups = {f"memberships__{name}": value for name, value in membership.items()}
        return self.filter(pk__in=self.model._default_manager.filter(**lookups).values("pk"))


class Tenant(models.Model):
    """A team that owns Kubernetes namespaces and whose members claim devices within quotas."""

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=63, unique=True)
    description = models.TextField(blank=True)
    requires_approval = models.BooleanField(
        default=False,
        help_text="Claim requests of this tenant wait for a tenant admin or portal admin.",
    )
    resource_quota_backstop = models.BooleanField(
        "ResourceQuota backstop",
        default=False,
        help_text="Keep a Kubernetes ResourceQuota in each of the tenant's namespaces in step "
        "with its portal quotas, so claims made outside the portal are limited too.",
    )
    max_token_lifetime = models.DurationField(
        null=True,
        blank=True,
        help_text="Members' API tokens expire within this. Blank: no limit.",
    )
    webhook_url = models.URLField(
        blank=True, help_text="Notifications are POSTed here as signed JSON. Blank: none."
    )
    webhook_secret = models.CharField(
        max_length=200, blank=True, help_text="Shared secret that signs webhook deliveries."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("tenant-detail", kwargs={"slug": self.slug})

    def clean(self) -> None:
        """Names and descriptions are printable text (``validate_printable_text``); the
        description is at most ``DESCRIPTION_MAX_CHARS`` long. A method rather than field
        validators: the rules may change without a migration."""
        errors: dict[str, list[str]] = {}
        for field, multiline in (("name", False), ("description", True)):
            try:
                validate_printable_text(getattr(self, field), multiline=multiline)
            except ValidationError as error:
                errors.setdefault(field, []).extend(error.messages)
        if self.slug in RESERVED_SLUGS:
            errors.setdefault("slug", []).append(
                f"“{self.slug}” is reserved for a portal page; choose another slug."
            )
        if len(self.description) > DESCRIPTION_MAX_CHARS:
            errors.setdefault("description", []).append(
                f"Keep the description under {DESCRIPTION_MAX_CHARS} characters."
            )
        if errors:
            raise ValidationError(errors)

    @property
    def namespace_names(self) -> list[str]:
        return [namespace.name for namespace in self.namespaces.all()]


class TenantNamespace(models.Model):
    """A Kubernetes namespace owned by exactly one tenant; its claims count against the tenant."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="namespaces")
    name = models.CharField(max_length=63, unique=True, validators=[dns_label_validator])

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
