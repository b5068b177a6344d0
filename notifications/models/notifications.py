"""The log of notices sent (or skipped), one row per recipient and channel."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models

from notifications.models.events import Event
from portal.models import Tenant

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

__all__ = ["Notification", "NotificationQuerySet"]


class NotificationQuerySet(models.QuerySet["Notification"]):
    def for_user(self, user: AbstractBaseUser) -> NotificationQuerySet:
        return self.filter(user=user, channel=Notification.Channel.EMAIL)


class Notification(models.Model):
    """One notice to one recipient: a user (email) or a tenant (webhook).

    ``dedupe_key`` names the occurrence and the recipient (``lease_expiring:<request>:<expiry>
    :email:<user>``), so a beat task that sees the same situation twice records — and sends —
    the notice once."""

    class Channel(models.TextChoices):
        EMAIL = "email", "Email"
        WEBHOOK = "webhook", "Webhook"

    event = models.CharField(max_length=30, choices=Event.choices)
    channel = models.CharField(max_length=10, choices=Channel.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="notifications",
    )
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.CASCADE, related_name="notifications"
    )
    # What it is about, as the audit trail names objects ("claims.ClaimRequest", pk).
    object_type = models.CharField(max_length=100, blank=True)
    object_id = models.CharField(max_length=100, blank=True)
    subject = models.CharField(max_length=200)
    body = models.TextField(blank=True)
    url = models.URLField(max_length=500, blank=True)
    dedupe_key = models.CharField(max_length=300, unique=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    objects = NotificationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["user", "-created_at"])]

    def __str__(self) -> str:
        return self.subject

    @property
    def status(self) -> str:
        if self.sent_at:
            return "sent"
        return "not sent" if self.error else "queued"
