"""Bearer-token authentication for automation (``Authorization: Bearer drap_…``)."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from portal.models import ApiToken
from portal.models.api_tokens import hash_token

__all__ = ["ApiTokenAuthentication"]

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
            raise exceptions.AuthenticationFailed(
                "Malformed Authorization header: expected 'Bearer <token>'."
            )
        token = (
            ApiToken.objects.select_related("user").filter(token_hash=hash_token(header[1])).first()
        )
        if token is None or token.is_revoked:
            raise exceptions.AuthenticationFailed("Invalid or revoked API token.")
        if token.is_expired:
            raise exceptions.AuthenticationFailed("This API token has expired.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("The token's user is inactive.")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = ApiTokenAuthentication
    name = "apiToken"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "An API token from the portal."}
