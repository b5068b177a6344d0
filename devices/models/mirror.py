"""What every mirrored object has: the common columns and the tenant-namespace gate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from django.db import models

from toolkit.querysets import VisibleQuerySet

if TYPE_CHECKING:
    from django.contrib.auth.models import User

__all__ = ["MirroredObject", "NamespacedQuerySet"]


class NamespacedQuerySet(VisibleQuerySet[Any]):
    """Gate for mirrored objects that live in a namespace (claims, templates, pods)."""

    def visible_to_member(self, user: User) -> Self:
        """Portal admins see everything; others what is in their tenants' namespaces."""
        from portal.models import TenantNamespace

        namespaces = TenantNamespace.objects.filter(tenant__memberships__user=user)
        return self.filter(namespace__in=namespaces.values("name"))


class MirroredObject(models.Model):
    """Fields common to every row that mirrors one Kubernetes object.

    ``raw`` is the object exactly as the API server sent it (every field, including fields newer
    than our client knows); the other columns are derived from it for querying. ``problems``
    lists what could not be derived from a malformed object, which is then stored raw and flagged
    rather than dropped.
    """

    uid = models.CharField(max_length=64, unique=True)
    name = models.CharField(max_length=253, db_index=True)
    resource_version = models.CharField(max_length=64)
    raw = models.JSONField()
    problems = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(null=True, blank=True)  # metadata.creationTimestamp
    mirrored_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True

    @property
    def is_malformed(self) -> bool:
        return bool(self.problems)

    @property
    def labels(self) -> dict[str, str]:
        return self.raw.get("metadata", {}).get("labels") or {}
