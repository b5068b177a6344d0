"""Creating and revoking API tokens."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from portal.models import ApiToken, AuditEvent, Tenant
from portal.models.api_tokens import generate_token, hash_token
from portal.services.audit import record_event
from toolkit.durations import format_duration

__all__ = [
    "IssuedToken",
    "TokenPolicy",
    "issue_api_token",
    "lifetime_refusal",
    "revoke_api_token",
    "token_policy",
]


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # shown to the user once, never stored


@dataclass(frozen=True)
class TokenPolicy:
    """The strictest ``Tenant.max_token_lifetime`` among the user's tenants."""

    max_lifetime: dt.timedelta
    tenant: Tenant

    def describe(self) -> str:
        return (
            f"{self.tenant.name}'s policy: API tokens expire within "
            f"{format_duration(self.max_lifetime)}."
        )


def token_policy(user: User) -> TokenPolicy | None:
    """The lifetime limit that applies to ``user``'s new tokens; None when no tenant of theirs
    sets one. A token acts in every tenant of its user, so the shortest limit wins."""
    tenant = (
        Tenant.objects.filter(memberships__user=user, max_token_lifetime__isnull=False)
        .order_by("max_token_lifetime", "name")
        .first()
    )
    if tenant is None or tenant.max_token_lifetime is None:
        return None
    return TokenPolicy(max_lifetime=tenant.max_token_lifetime, tenant=tenant)


def lifetime_refusal(lifetime: dt.timedelta | None, policy: TokenPolicy | None) -> str | None:
    """Why a new token may not live ``lifetime`` under ``policy`` (see :func:`token_policy`);
    None when it may. ``None`` (no expiry) is always allowed: under a policy it means the
    longest lifetime the policy allows. Lifetimes beyond ``API_TOKEN_MAX_DAYS`` are refused."""
    max_days = settings.API_TOKEN_MAX_DAYS
    if lifetime is None:
        return None
    if lifetime <= dt.timedelta(0) or lifetime.days > max_days:
        return f"A token may live between 1 and {max_days} days."
    if policy is not None and lifetime > policy.max_lifetime:
        return f"{policy.describe()} Choose a shorter lifetime."
    return None


def issue_api_token(*, user: User, name: str, lifetime: dt.timedelta | None) -> IssuedToken:
    """Creates a token for ``user``; the clear secret is returned here and nowhere else.

    ``lifetime=None`` means the token never expires, unless a tenant of the user limits token
    lifetimes (``Tenant.max_token_lifetime``, see :func:`token_policy`): then it expires at the
    limit, and a longer lifetime is refused (:func:`lifetime_refusal`).
    """
    name = name.strip()
    if not name:
        raise ValidationError({"name": "Give the token a name so you can recognise it later."})
    policy = token_policy(user)
    refusal = lifetime_refusal(lifetime, policy)
    if refusal is not None:
        raise ValidationError({"lifetime": refusal})
    if lifetime is None and policy is not None:
        lifetime = policy.max_lifetime
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


def revoke_api_token(*, user: User, token_id: int) -> ApiToken:
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
