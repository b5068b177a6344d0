"""Bearer-token authentication for automation (``Authorization: Bearer drap_…``), and the
address rate of requests without valid credentials (``toolkit.api.throttling``)."""

from __future__ import annotations

import datetime as dt
from typing import NoReturn

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from portal.models import ApiToken
from portal.models.api_tokens import hash_token
from toolkit.api.throttling import charge_unauthenticated

__all__ = ["ApiTokenAuthentication", "UnauthenticatedRequests"]

# Writing last_used_at on every request would turn each API read into a write; once a minute
# is precise enough for "when was this token last used?".
LAST_USED_RESOLUTION = dt.timedelta(minutes=1)


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """Authenticates as the token's user, with exactly that user's permissions."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[object, ApiToken] | None:
        header = authentication.get_authorization_header(request).decode("latin-1").split()
        if not header or header[0].lower() not in ("bearer", "token"):
            return None
        if len(header) != 2:
            self._fail(request, "Malformed Authorization header: expected 'Bearer <token>'.")
        token = (
            ApiToken.objects.select_related("user").filter(token_hash=hash_token(header[1])).first()
        )
        if token is None or token.is_revoked:
            self._fail(request, "Invalid or revoked API token.")
        if token.is_expired:
            self._fail(request, "This API token has expired.")
        if not token.user.is_active:
            self._fail(request, "The token's user is inactive.")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return self.keyword

    @staticmethod
    def _fail(request: Request, reason: str) -> NoReturn:
        """401 with ``reason``; 429 once the address is over its rate of failed requests."""
        charge_unauthenticated(request)
        raise exceptions.AuthenticationFailed(reason)


class UnauthenticatedRequests(authentication.BaseAuthentication):
    """The last authentication class: authenticates nobody, and charges a request that no
    class before it authenticated to its address's rate (429 beyond it). See
    ``toolkit.api.throttling`` for why this happens during authentication."""

    def authenticate(self, request: Request) -> None:
        view = (getattr(request, "parser_context", None) or {}).get("view")
        if getattr(view, "swagger_fake_view", False):
            # drf-spectacular's schema generation (``check``, ``/api/schema/``) asks each view
            # for its queryset with a made-up request: not a client to charge.
            return None
        charge_unauthenticated(request)
        return None


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = ApiTokenAuthentication
    name = "apiToken"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "An API token from the portal."}


class UnauthenticatedRequestsScheme(OpenApiAuthenticationExtension):
    """Not a way to authenticate: nothing for the schema's security."""

    target_class = UnauthenticatedRequests
    name: list[str] = []

    # drf-spectacular's AutoSchema skips None, which its annotation leaves out.
    def get_security_requirement(self, auto_schema: object) -> None:  # type: ignore[override]
        return None

    def get_security_definition(self, auto_schema: object) -> list[dict[str, str]]:
        return []
