"""The mirror's own bookkeeping: how far each kind is behind the cluster."""

from __future__ import annotations

from django.db import models

__all__ = ["MirrorStatus"]


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
        # The table keeps the name it had when the mirror lived in the devices app.
        db_table = "devices_mirrorstatus"

    def __str__(self) -> str:
        return f"{self.kind}: {self.get_state_display()}"
