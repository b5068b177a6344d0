"""Which notifications each user wants by email."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models

from notifications.models.events import Event

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

__all__ = ["NotificationPreference", "NotificationPreferenceQuerySet"]


class NotificationPreferenceQuerySet(models.QuerySet["NotificationPreference"]):
    def email_choices(self, user: AbstractBaseUser) -> dict[Event, bool]:
        """Per event, whether ``user`` wants it by email: on unless they turned it off."""
        chosen = dict(self.filter(user=user).values_list("event", "email"))
        return {event: chosen.get(event.value, True) for event in Event}

    def opted_out(self, event: Event) -> models.QuerySet:
        """Ids of the users who turned ``event`` off."""
        return self.filter(event=event, email=False).values("user_id")


class NotificationPreference(models.Model):
    """One user's choice for one event; no row means the default (email on)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preferences"
    )
    event = models.CharField(max_length=30, choices=Event.choices)
    email = models.BooleanField(default=True)

    objects = NotificationPreferenceQuerySet.as_manager()

    class Meta:
        ordering = ["user", "event"]
        constraints = [
            models.UniqueConstraint(fields=["user", "event"], name="one_preference_per_event"),
        ]

    def __str__(self) -> str:
        return f"{self.user} {self.event}: {'email' if self.email else 'off'}"
