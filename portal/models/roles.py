"""The roles a member holds in a tenant (its own module: tenants and memberships both use it)."""

from django.db import models

__all__ = ["Role"]


class Role(models.TextChoices):
    MEMBER = "member", "Member"
    TENANT_ADMIN = "tenant_admin", "Tenant admin"
