"""The identity-provider account each single sign-on user signs in with."""

from __future__ import annotations

from django.conf import settings
from django.db import models

__all__ = ["ExternalIdentity"]


class ExternalIdentity(models.Model):
    """Links a portal user to one OpenID Connect account: the provider's ``iss`` and ``sub``,
    which (unlike a username or an email address) the provider never gives to someone else."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="external_identity"
    )
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    # The groups the provider sent at the last sign-in (shown to someone without a tenant).
    groups = models.JSONField(default=list, blank=True)
    last_sign_in = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="one_user_per_identity"),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.subject} at {self.issuer})"
