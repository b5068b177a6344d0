"""The mirror's own bookkeeping: how far each kind is behind the cluster, and what the
ResourceQuota backstop found in each tenant namespace."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from portal.models import Tenant

__all__ = ["BackstopStatus", "MirrorStatus", "MirrorStatusQuerySet"]


def stale_after() -> timedelta:
    """Silence longer than this makes a kind stale (``MIRROR_STALE_SECONDS``); twice as long,
    very stale."""
    return timedelta(seconds=settings.MIRROR_STALE_SECONDS)


class MirrorStatusQuerySet(models.QuerySet["MirrorStatus"]):
    def stale(self, now: datetime | None = None) -> MirrorStatusQuerySet:
        """Kinds not heard from (event, bookmark or list) for longer than the stale bound,
        or never."""
        cutoff = (now or timezone.now()) - stale_after()
        return self.filter(Q(last_seen_at__isnull=True) | Q(last_seen_at__lt=cutoff))


class MirrorStatus(models.Model):
    """How far the mirror of one kind is behind the cluster, and what went wrong last."""

    class State(models.TextChoices):
        NEVER_SYNCED = "never_synced", "Never synced"
        LISTING = "listing", "Listing"
        WATCHING = "watching", "Watching"
        BACKING_OFF = "backing_off", "Backing off"
        STOPPED = "stopped", "Stopped"

    class Freshness(models.TextChoices):
        FRESH = "fresh", "Fresh"
        STALE = "stale", "Stale"
        VERY_STALE = "very_stale", "Very stale"

    kind = models.CharField(max_length=64, unique=True)
    state = models.CharField(max_length=20, choices=State.choices, default=State.NEVER_SYNCED)
    resource_version = models.CharField(max_length=64, blank=True)
    cluster_uid = models.CharField(
        max_length=64, blank=True, help_text="uid of kube-system in the cluster the rows are from."
    )
    events_total = models.PositiveBigIntegerField(default=0)
    relists_total = models.PositiveIntegerField(default=0)
    error_count = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, help_text="Cleared once the watcher recovers.")
    last_error_at = models.DateTimeField(null=True, blank=True)
    last_event_at = models.DateTimeField(null=True, blank=True)
    last_seen_at = models.DateTimeField(
        null=True, blank=True, help_text="Last event, bookmark or complete list."
    )
    last_list_at = models.DateTimeField(null=True, blank=True)
    last_list_seconds = models.FloatField(null=True, blank=True)
    lag_seconds = models.FloatField(
        null=True, blank=True, help_text="Event received → row committed, last batch."
    )
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    watcher = models.CharField(max_length=200, blank=True, help_text="Who holds the watch.")

    objects = MirrorStatusQuerySet.as_manager()

    class Meta:
        ordering = ["kind"]
        verbose_name_plural = "mirror statuses"
        # The table keeps the name it had when the mirror lived in the devices app.
        db_table = "devices_mirrorstatus"

    def __str__(self) -> str:
        return f"{self.kind}: {self.get_state_display()}"

    @property
    def seconds_since_seen(self) -> float | None:
        """Seconds since the last event, bookmark or list; None if never."""
        if self.last_seen_at is None:
            return None
        return max(0.0, (timezone.now() - self.last_seen_at).total_seconds())

    @property
    def freshness(self) -> MirrorStatus.Freshness:
        """Fresh while heard from within the stale bound, stale up to twice that, then very
        stale. A kind never heard from is very stale."""
        silent = self.seconds_since_seen
        bound = stale_after().total_seconds()
        if silent is None or silent > 2 * bound:
            return self.Freshness.VERY_STALE
        if silent > bound:
            return self.Freshness.STALE
        return self.Freshness.FRESH

    @property
    def is_stale(self) -> bool:
        return self.freshness != self.Freshness.FRESH


class BackstopStatus(models.Model):
    """What the ResourceQuota backstop last found in one of a tenant's namespaces
    (``mirror.backstop``): written by syncs, checks and repairs, so pages read the database and
    never the cluster. A row also marks a namespace where the portal may have left a
    ResourceQuota behind: the rows go once the backstop's objects are gone."""

    class State(models.TextChoices):
        IN_SYNC = "in_sync", "In sync"
        DRIFTED = "drifted", "Drifted"
        MISSING = "missing", "Missing"
        FOREIGN = "foreign", "Name taken"
        ERROR = "error", "Error"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="backstop_statuses")
    namespace = models.CharField(max_length=63)
    state = models.CharField(max_length=20, choices=State.choices)
    desired = models.JSONField(default=dict, help_text="spec.hard the portal wants.")
    live = models.JSONField(
        null=True, blank=True, help_text="spec.hard found in the cluster; null when none."
    )
    differences = models.JSONField(
        default=list,
        help_text="Per resource: change (changed, missing, extra), desired and live values.",
    )
    error = models.TextField(blank=True)
    checked_at = models.DateTimeField()

    class Meta:
        ordering = ["tenant", "namespace"]
        verbose_name_plural = "backstop statuses"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "namespace"], name="one_backstop_status_per_namespace"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant}/{self.namespace}: {self.get_state_display()}"
