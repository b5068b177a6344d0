"""Creating and revoking API tokens."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from portal.models import ApiToken, AuditEvent
from portal.models.api_tokens import generate_token, hash_token
from portal.services.audit import record_event

__all__ = ["IssuedToken", "issue_api_token", "revoke_api_token"]


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # shown to the user once, never stored


def issue_api_token(
    *, user: AbstractBaseUser, name: str, lifetime: dt.timedelta | None
) -> IssuedToken:
    """Creates a token for ``user``; the clear secret is returned here and nowhere else.

    ``lifetime=None`` means the token never expires. Lifetimes beyond ``API_TOKEN_MAX_DAYS``
    are refused.
    """
    name = name.strip()
    if not name:
        raise ValidationError({"name": "Give the token a name so you can recognise it later."})
    max_days = settings.API_TOKEN_MAX_DAYS
    if lifetime is not None and (lifetime <= dt.timedelta(0) or lifetime.days > max_days):
        raise ValidationError({"lifetime": f"A token may live between 1 and {max_days} days."})
    secret = generate_token()
    with transaction.atomic():
        token = ApiToken.objects.create(
            user=user,
            name=name,
            prefix=secret[:12],
            token_hash=hash_token(secret),
            expires_at=timezone.now() + lifetime if lifetime is not None else None,
        )
        record_event(
            actor=user,
            action=AuditEvent.Action.TOKEN_CREATED,
            obj=token,
            after={
                "name": token.name,
                "prefix": token.prefix,
                "expires_at": token.expires_at.isoformat() if token.expires_at else None,
            },
        )
    return IssuedToken(token=token, secret=secret)


def revoke_api_token(*, user: AbstractBaseUser, token_id: int) -> ApiToken:
    """Revokes one of the user's own tokens. Revoking twice is harmless (idempotent).

    Raises ``ApiToken.DoesNotExist`` for a token that is not the user's.
    """
    with transaction.atomic():
        token = ApiToken.objects.select_for_update().get(pk=token_id, user=user)
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            record_event(
                actor=user,
                action=AuditEvent.Action.TOKEN_REVOKED,
                obj=token,
                before={"revoked_at": None},
                after={"revoked_at": token.revoked_at.isoformat()},
            )
    return token
