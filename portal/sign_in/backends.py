"""Authentication backends: single sign-on (OpenID Connect) and local passwords.

``OidcBackend`` is mozilla-django-oidc's backend with the provider's endpoints from discovery,
the ID token's issuer and audience checked, users matched by ``iss`` + ``sub`` and the claims
handed to ``portal.services.identities``. It takes part in no ``authenticate()`` call: only
the callback view (``portal.sign_in.views``) asks it, so password lockouts (and their failure
signals) never see a single sign-on. ``LocalPasswordBackend`` is Django's model backend limited
by ``LOCAL_LOGIN``: also for sessions, so turning a break-glass account off signs it out.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from portal.services.identities import SignInRefused, sign_in_with_provider
from portal.sign_in.provider import oidc_setting

__all__ = ["LocalPasswordBackend", "OidcBackend", "local_login_allows"]


def local_login_allows(username: str) -> bool:
    """Whether ``LOCAL_LOGIN`` lets this account sign in with a password."""
    if settings.LOCAL_LOGIN == "all":
        return True
    return settings.LOCAL_LOGIN == "listed" and username in settings.LOCAL_LOGIN_USERS


class LocalPasswordBackend(ModelBackend):
    def user_can_authenticate(self, user: User | AnonymousUser | None) -> bool:
        return (
            super().user_can_authenticate(user)
            and user is not None
            and local_login_allows(user.get_username())
        )


class OidcBackend(OIDCAuthenticationBackend):
    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The library reads the endpoints here; Django builds a backend for every session
        # lookup, so they are read when a sign-in needs them instead (properties below).
        from django.contrib.auth import get_user_model

        self.UserModel = get_user_model()

    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: oidc_setting("OIDC_OP_TOKEN_ENDPOINT"))
    OIDC_OP_USER_ENDPOINT = property(lambda self: oidc_setting("OIDC_OP_USER_ENDPOINT"))
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: oidc_setting("OIDC_OP_JWKS_ENDPOINT"))
    OIDC_RP_CLIENT_ID = property(lambda self: settings.OIDC_RP_CLIENT_ID)
    OIDC_RP_CLIENT_SECRET = property(lambda self: settings.OIDC_RP_CLIENT_SECRET)
    OIDC_RP_SIGN_ALGO = property(lambda self: settings.OIDC_RP_SIGN_ALGO)
    OIDC_RP_IDP_SIGN_KEY = None

    def authenticate(self, request: HttpRequest | None, **credentials: Any) -> None:
        """Never signs anyone in through ``django.contrib.auth.authenticate``."""
        return None

    def authenticate_callback(
        self, request: HttpRequest, *, nonce: str | None, code_verifier: str | None
    ) -> User | None:
        """The code flow's last steps for the callback view: exchange the code (with the PKCE
        verifier), verify the ID token, read userinfo, sign in. ``None`` when refused, with
        the reason in ``request.sign_in_refused``. Raises ``ProviderUnavailable`` and
        ``requests`` errors when the provider cannot be reached."""
        request.sign_in_refused = ""  # type: ignore[attr-defined]
        user = super().authenticate(request, nonce=nonce, code_verifier=code_verifier)
        if user is not None:
            user.backend = f"{__name__}.{type(self).__name__}"
        return user

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """The library checks the signature, expiry and nonce; the issuer and the audience
        (OpenID Connect Core §3.1.3.7) are checked here."""
        payload: dict[str, Any] = super().verify_token(token, **kwargs)
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if payload.get("iss") != settings.OIDC_ISSUER:
            raise SuspiciousOperation(f"ID token issuer {payload.get('iss')!r} is not OIDC_ISSUER.")
        if settings.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("ID token audience does not include OIDC_CLIENT_ID.")
        if len(audiences) > 1 and payload.get("azp") != settings.OIDC_RP_CLIENT_ID:
            raise SuspiciousOperation("ID token authorized party (azp) is not OIDC_CLIENT_ID.")
        return payload

    def get_userinfo(
        self, access_token: str, id_token: str, payload: dict[str, Any]
    ) -> dict[str, Any]:
        """The ID token's claims with the userinfo endpoint's on top (a provider may put the
        groups in either); userinfo about another subject is refused (Core §5.3.4)."""
        userinfo: dict[str, Any] = super().get_userinfo(access_token, id_token, payload)
        if userinfo.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("userinfo subject differs from the ID token's.")
        return {**payload, **userinfo}

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        return bool(claims.get("sub"))

    def get_or_create_user(
        self, access_token: str, id_token: str, payload: dict[str, Any]
    ) -> User | None:
        claims = self.get_userinfo(access_token, id_token, payload)
        try:
            return sign_in_with_provider(issuer=settings.OIDC_ISSUER, claims=claims)
        except SignInRefused as refusal:
            self.request.sign_in_refused = str(refusal)
            return None

    def get_user(self, user_id: Any) -> User | None:
        user = self.UserModel._default_manager.filter(pk=user_id).first()
        return user if user is not None and self.user_can_authenticate(user) else None
