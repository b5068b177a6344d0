"""Deliveries of events to a tenant's webhook, with their retry state."""

from __future__ import annotations

import uuid

from django.db import models

from portal.models import Tenant

__all__ = ["WebhookDelivery", "WebhookDeliveryQuerySet"]

TEST_EVENT = "test"


class WebhookDeliveryQuerySet(models.QuerySet["WebhookDelivery"]):
    def due(self, now: object) -> WebhookDeliveryQuerySet:
        """Pending deliveries whose next attempt time has come."""
        return self.filter(state=WebhookDelivery.State.PENDING, next_attempt_at__lte=now)


class WebhookDelivery(models.Model):
    """One event POSTed to one tenant's webhook: attempted until the receiver answers 2xx,
    answers a 4xx that retrying cannot fix, or the attempts run out (``notifications.webhooks``).
    The id is the payload's ``id`` and the ``X-DRA-Portal-Delivery`` header, the same on every
    attempt, so a receiver can drop repeats."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="webhook_deliveries")
    notification = models.OneToOneField(
        "notifications.Notification",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="delivery",
    )
    event = models.CharField(max_length=30)
    payload = models.JSONField()
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    objects = WebhookDeliveryQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "webhook deliveries"
        indexes = [models.Index(fields=["state", "next_attempt_at"])]

    def __str__(self) -> str:
        return f"{self.event} → {self.tenant}"
