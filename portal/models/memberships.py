"""Who belongs to which tenant, and with which role."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from portal.models.roles import Role
from portal.models.tenants import Tenant

__all__ = ["Membership"]


class Membership(models.Model):
    Role = Role

    class Source(models.TextChoices):
        """Who manages the membership: people in the portal, or the identity provider's groups
        (``OIDC_GROUP_MAP``), which add, change and remove it at every sign-in."""

        PORTAL = "portal", "Portal"
        IDENTITY_PROVIDER = "identity_provider", "Identity provider"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.MEMBER)
    source = models.CharField(max_length=20, choices=Source.choices, default=Source.PORTAL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tenant__name", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["user", "tenant"], name="one_membership_per_tenant"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant} ({self.get_role_display()})"

    @property
    def is_from_identity_provider(self) -> bool:
        return self.source == self.Source.IDENTITY_PROVIDER

    @property
    def is_tenant_admin(self) -> bool:
        return self.role == self.Role.TENANT_ADMIN
