"""ClaimIdleness: whether an allocated claim is idle, why, since when, and what happens next.

One row per allocated claim the idle sweep (``claims.usage.idle``) has looked at, kept by it alone:
it records since when the claim has had no consumer (``unused_since``, so that "no pod for two
hours" survives across sweeps), and, while the claim is idle, the reason, the episode number
(owners are told once per episode) and when the portal reclaims it. The row goes with the claim.
"""

from __future__ import annotations

from django.db import models

from claims.models.resource_claims import ResourceClaim

__all__ = ["ClaimIdleness", "ClaimIdlenessQuerySet"]


class ClaimIdlenessQuerySet(models.QuerySet["ClaimIdleness"]):
    def idle(self) -> ClaimIdlenessQuerySet:
        return self.filter(reason__gt="")

    def due_for_reclaim(self, now: object) -> ClaimIdlenessQuerySet:
        """Idle claims whose grace period is over and that no pod reserves (as mirrored:
        the reclaim asks the API server again before it deletes)."""
        return self.idle().filter(
            reclaim_at__lte=now,
            reclaimed_at__isnull=True,
            claim__consumer_count=0,
            claim__is_deleting=False,
        )


class ClaimIdleness(models.Model):
    class Reason(models.TextChoices):
        NOT_IDLE = "", "Not idle"
        NO_CONSUMER = "no_consumer", "No consumer"
        LOW_UTILISATION = "low_utilisation", "Low utilisation"

    claim = models.OneToOneField(ResourceClaim, on_delete=models.CASCADE, related_name="idleness")
    # Allocated and no pod in status.reservedFor since (as first seen by a sweep); null: in use.
    unused_since = models.DateTimeField(null=True, blank=True)
    reason = models.CharField(max_length=20, choices=Reason.choices, blank=True, db_index=True)
    idle_since = models.DateTimeField(null=True, blank=True)  # the episode's start
    # For ``LOW_UTILISATION``: utilisation under ``threshold`` percent since ``low_since``.
    low_since = models.DateTimeField(null=True, blank=True)
    threshold = models.PositiveSmallIntegerField(null=True, blank=True)
    utilisation = models.FloatField(null=True, blank=True)  # average over the idle window
    # Counts idle episodes; an episode ends when the claim is used again.
    episode = models.PositiveIntegerField(default=0)
    notified_episode = models.PositiveIntegerField(default=0)
    # When the portal deletes the claim if no pod reserves it then; null: reclaim off.
    reclaim_at = models.DateTimeField(null=True, blank=True)
    reclaimed_at = models.DateTimeField(null=True, blank=True)
    checked_at = models.DateTimeField()

    objects = ClaimIdlenessQuerySet.as_manager()

    class Meta:
        ordering = ["claim"]
        verbose_name_plural = "claim idleness"

    def __str__(self) -> str:
        return f"{self.claim_id}: {self.reason or 'not idle'}"

    @property
    def is_idle(self) -> bool:
        return bool(self.reason)
