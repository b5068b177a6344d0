"""API tokens for automation: shown once, stored hashed, optionally expiring, revocable."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

__all__ = ["ApiToken", "ApiTokenQuerySet", "hash_token"]

TOKEN_PREFIX = "drap_"  # noqa: S105 - a public marker, not a secret


def hash_token(raw: str) -> str:
    """SHA-256 of the token. Tokens carry 256 random bits, so a fast hash is sufficient."""
    return hashlib.sha256(raw.encode()).hexdigest()


def generate_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def usable(self) -> ApiTokenQuerySet:
        """Tokens neither revoked nor expired."""
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )


class ApiToken(models.Model):
    """A bearer token acting as its user, with exactly that user's permissions.

    Only the SHA-256 of the token is stored; ``prefix`` (the first characters) lets a user tell
    tokens apart in the list without the secret being recoverable.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'CI pipeline'.")
    prefix = models.CharField(max_length=16, editable=False)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    @property
    def is_usable(self) -> bool:
        return not self.is_expired and not self.is_revoked
