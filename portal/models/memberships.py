"""Who belongs to which tenant, and with which role."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from portal.models.roles import Role
from portal.models.tenants import Tenant

__all__ = ["Membership"]


class Membership(models.Model):
    Role = Role

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tenant__name", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["user", "tenant"], name="one_membership_per_tenant"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant} ({self.get_role_display()})"

    @property
    def is_tenant_admin(self) -> bool:
        return self.role == self.Role.TENANT_ADMIN
