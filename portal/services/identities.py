"""Single sign-on: the portal user an identity provider's verified claims sign in as.

The OpenID Connect protocol (tokens, signatures, nonce, PKCE) is mozilla-django-oidc's, in
``portal.sign_in``; this is what the portal does with the claims it got: find or create the
user by the provider's ``iss`` + ``sub``, refresh their name and email, make their
identity-provider memberships match their groups (``OIDC_GROUP_MAP``) and their portal admin
flags match ``OIDC_ADMIN_GROUPS``. Settings are read at call time.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, cast

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils import timezone

from portal.models import AuditEvent, ExternalIdentity, Membership, Tenant
from portal.services.audit import record_event
from portal.services.tenants import sync_provider_memberships
from portal.sign_in.groups import groups_from_claims, roles_for_groups

__all__ = ["SignInRefused", "sign_in_with_provider"]

logger = logging.getLogger(__name__)


class SignInRefused(Exception):
    """The provider vouched for the person but the portal will not sign them in; the message
    tells them why and whom to ask."""


def sign_in_with_provider(*, issuer: str, claims: Mapping[str, Any]) -> User:
    """The user for the provider's verified ``claims`` (ID token and userinfo), created on
    first sign-in, with memberships and admin flags brought in line with the claims' groups.

    All or nothing (one transaction). Raises ``SignInRefused``.
    """
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise SignInRefused("The identity provider sent no subject (sub) for your account.")
    groups = groups_from_claims(claims, settings.OIDC_GROUPS_CLAIM)
    with transaction.atomic():
        identity = (
            ExternalIdentity.objects.select_for_update()
            .select_related("user")
            .filter(issuer=issuer, subject=subject)
            .first()
        )
        if identity is None:
            identity = ExternalIdentity(
                user=_user_for_new_identity(claims), issuer=issuer, subject=subject
            )
        user = identity.user
        if not user.is_active:
            raise SignInRefused(
                f"Your portal account {user.get_username()} is deactivated. Ask a portal admin."
            )
        _update_profile(user, claims)
        _update_admin_flags(user, groups)
        identity.groups = groups
        identity.last_sign_in = timezone.now()
        identity.save()
        roles = roles_for_groups(groups, settings.OIDC_GROUP_MAP)
        tenants = {tenant.slug: tenant for tenant in Tenant.objects.filter(slug__in=roles)}
        for slug in sorted(set(roles) - set(tenants)):
            logger.warning("OIDC_GROUP_MAP names tenant %r, which does not exist", slug)
        sync_provider_memberships(
            user=user,
            roles={
                tenants[slug]: Membership.Role(role)
                for slug, role in roles.items()
                if slug in tenants
            },
        )
    return user


def _user_for_new_identity(claims: Mapping[str, Any]) -> User:
    claim = settings.OIDC_USERNAME_CLAIM
    username = claims.get(claim)
    if not isinstance(username, str) or not username.strip():
        raise SignInRefused(
            f"The identity provider sent no “{claim}” claim, which names your portal account. "
            "Ask its administrator to release it to the portal (or a portal admin to choose "
            "another claim with OIDC_USERNAME_CLAIM)."
        )
    user_model = get_user_model()
    username = username.strip()
    try:
        user_model.username_validator(username)
        max_length = user_model._meta.get_field("username").max_length
        assert max_length is not None  # AbstractUser's username has one (150)
        if len(username) > max_length:
            raise ValidationError("too long")
    except ValidationError:
        raise SignInRefused(
            f"Your username at the identity provider, “{username[:150]}”, cannot name a portal "
            "account (at most 150 letters, digits and @ . + - _). Ask a portal admin."
        ) from None
    existing = user_model._default_manager.filter(username=username).first()
    if existing is None:
        return user_model._default_manager.create_user(username=username)
    if ExternalIdentity.objects.filter(user=existing).exists():
        raise SignInRefused(
            f"The portal account {username} already signs in with another account at the "
            "identity provider. Ask a portal admin."
        )
    if not settings.OIDC_LINK_EXISTING_USERS or username in settings.LOCAL_LOGIN_USERS:
        raise SignInRefused(
            f"A local portal account named {username} already exists, and the portal does not "
            "hand local accounts to single sign-on. Ask a portal admin to rename or remove it "
            "(or to set OIDC_LINK_EXISTING_USERS)."
        )
    return existing


def _update_profile(user: User, claims: Mapping[str, Any]) -> None:
    changed = []
    for field, claim in (
        ("email", "email"),
        ("first_name", "given_name"),
        ("last_name", "family_name"),
    ):
        value = claims.get(claim)
        if isinstance(value, str):
            column = cast("models.Field[Any, Any]", user._meta.get_field(field))  # User's own
            value = value.strip()[: column.max_length]
            if getattr(user, field) != value:
                setattr(user, field, value)
                changed.append(field)
    if user.pk is None or changed:
        user.save()


def _update_admin_flags(user: User, groups: list[str]) -> None:
    """With ``OIDC_ADMIN_GROUPS`` set, the groups decide who is a portal admin (``is_staff``,
    and ``is_superuser`` too with ``OIDC_ADMIN_SUPERUSER``); without it the flags are the
    portal's to set. A change is audited."""
    if not settings.OIDC_ADMIN_GROUPS:
        return
    is_admin = not set(groups).isdisjoint(settings.OIDC_ADMIN_GROUPS)
    before = {"is_staff": user.is_staff, "is_superuser": user.is_superuser}
    after = {"is_staff": is_admin, "is_superuser": is_admin and settings.OIDC_ADMIN_SUPERUSER}
    if before == after:
        return
    user.is_staff, user.is_superuser = after["is_staff"], after["is_superuser"]
    user.save(update_fields=["is_staff", "is_superuser"])
    record_event(
        actor=None,
        action=AuditEvent.Action.UPDATED,
        obj=user,
        before=before,
        after={**after, "source": str(Membership.Source.IDENTITY_PROVIDER)},
    )
