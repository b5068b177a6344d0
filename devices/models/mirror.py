"""What every mirrored object has, and the per-kind health of the mirror."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

__all__ = ["MirrorStatus", "MirroredObject", "NamespacedQuerySet"]


class NamespacedQuerySet(models.QuerySet):
    """Gate for mirrored objects that live in a namespace (claims, templates, pods)."""

    def visible_to(self, user: AbstractBaseUser | AnonymousUser) -> NamespacedQuerySet:
        """Portal admins see everything; others what is in their tenants' namespaces."""
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self.all()
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


class MirrorStatus(models.Model):
    """How far the mirror of one kind is behind the cluster, and what went wrong last."""

    class State(models.TextChoices):
        NEVER_SYNCED = "never_synced", "Never synced"
        LISTING = "listing", "Listing"
        WATCHING = "watching", "Watching"
        BACKING_OFF = "backing_off", "Backing off"
        STOPPED = "stopped", "Stopped"

    kind = models.CharField(max_length=64, unique=True)
    state = models.CharField(max_length=20, choices=State.choices, default=State.NEVER_SYNCED)
    resource_version = models.CharField(max_length=64, blank=True)
    events_total = models.PositiveBigIntegerField(default=0)
    relists_total = models.PositiveIntegerField(default=0)
    error_count = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    last_event_at = models.DateTimeField(null=True, blank=True)
    last_list_at = models.DateTimeField(null=True, blank=True)
    last_list_seconds = models.FloatField(null=True, blank=True)
    lag_seconds = models.FloatField(
        null=True, blank=True, help_text="Event received → row committed, last batch."
    )
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    watcher = models.CharField(max_length=200, blank=True, help_text="Who holds the watch.")

    class Meta:
        ordering = ["kind"]
        verbose_name_plural = "mirror statuses"

    def __str__(self) -> str:
        return f"{self.kind}: {self.get_state_display()}"
