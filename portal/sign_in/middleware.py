"""Keeps a single sign-on session in step with the identity provider.

mozilla-django-oidc's ``SessionRefresh``: once ``OIDC_RENEW_SECONDS`` have passed since a
sign-on, the next page load goes through the provider silently (``prompt=none``), which
re-reads the person's groups (memberships follow) and signs them out of the portal when their
provider session has ended or their account was removed. Only whole-page GETs of single
sign-on sessions: never htmx fragments or the API (a redirect to the provider would break
them; they follow at the next page load), never password or token sign-ins.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.deprecation import MiddlewareMixin
from mozilla_django_oidc.middleware import SessionRefresh as LibrarySessionRefresh

from portal.sign_in.provider import ProviderUnavailable, oidc_setting

__all__ = ["SessionRefresh"]


class SessionRefresh(LibrarySessionRefresh):
    get_settings = staticmethod(oidc_setting)

    def __init__(self, get_response: Any) -> None:
        # The library reads the provider's endpoint here; it is read per refresh instead.
        MiddlewareMixin.__init__(self, get_response)

    OIDC_EXEMPT_URLS: list[str] = []
    OIDC_STATE_SIZE = 32
    OIDC_NONCE_SIZE = 32
    OIDC_USE_NONCE = True
    OIDC_AUTHENTICATION_CALLBACK_URL = "oidc-callback"
    OIDC_OP_AUTHORIZATION_ENDPOINT = property(
        lambda self: oidc_setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
    )
    OIDC_RP_CLIENT_ID = property(lambda self: settings.OIDC_RP_CLIENT_ID)
    OIDC_RP_SCOPES = property(lambda self: settings.OIDC_RP_SCOPES)

    @property
    def exempt_urls(self) -> set[str]:
        return {reverse(name) for name in ("oidc-authenticate", "oidc-callback", "login", "logout")}

    def is_refreshable_url(self, request: HttpRequest) -> bool:
        return (
            settings.OIDC_ENABLED
            and settings.OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS > 0
            and not getattr(request, "htmx", False)
            and not request.path.startswith("/api/")
            and bool(super().is_refreshable_url(request))
        )

    def process_request(self, request: HttpRequest) -> HttpResponse | None:
        try:
            response: HttpResponse | None = super().process_request(request)
        except ProviderUnavailable:
            return None  # the provider is away: keep the session, try again at the next page
        return response
