"""Sign-in pages: the login page, single sign-on (start and callback) and sign-out.

The single sign-on views are mozilla-django-oidc's (authorization code flow, state, nonce,
PKCE) with the provider's endpoints from discovery, its failures explained on the login page
instead of a bare redirect, and sign-out that ends the provider's session too.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.contrib import auth, messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect
from django.urls import reverse
from django.views import View
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from portal.sign_in.backends import OidcBackend
from portal.sign_in.provider import ProviderUnavailable, end_session_endpoint, oidc_setting

__all__ = ["LoginView", "LogoutView", "OidcAuthenticateView", "OidcCallbackView"]

logger = logging.getLogger(__name__)

# Answers of an authorization request that only mean "sign in again" (OpenID Connect Core
# §3.1.2.6), e.g. after a silent session refresh found the provider's session over.
SIGN_IN_AGAIN = {"login_required", "interaction_required", "consent_required"}


def _unavailable(request: HttpRequest, error: Exception) -> HttpResponse:
    logger.warning("identity provider unavailable: %s", error)
    messages.error(
        request,
        f"{settings.OIDC_PROVIDER_NAME} cannot be reached right now, so single sign-on is not "
        "possible. Try again in a minute; if it persists, tell a portal admin.",
    )
    return redirect("login")


class OidcAuthenticateView(OIDCAuthenticationRequestView):
    """``/oidc/authenticate/?next=…``: sends the browser to the provider (code, PKCE, nonce)."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, **kwargs: Any) -> None:
        View.__init__(self, **kwargs)  # the endpoint is read per request, below

    def get(self, request: HttpRequest) -> HttpResponse:
        if not settings.OIDC_ENABLED:
            raise Http404("Single sign-on is not configured.")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = oidc_setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except ProviderUnavailable as error:
            return _unavailable(request, error)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        response: HttpResponse = super().get(request)
        return response


class OidcCallbackView(OIDCAuthenticationCallbackView):
    """``/oidc/callback/``: where the provider sends the browser back with a code (or an
    error). The library's checks of state, nonce and PKCE, then ``OidcBackend`` asked directly
    (not ``authenticate()``, see ``portal.sign_in.backends``)."""

    get_settings = staticmethod(oidc_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not settings.OIDC_ENABLED:
            raise Http404("Single sign-on is not configured.")
        states = request.session.get("oidc_states")
        state = request.GET.get("state")
        if request.GET.get("error"):
            if isinstance(states, dict) and state in states:
                del states[state]  # a failed answer's state is never accepted again
                request.session.save()
            was_signed_in = request.user.is_authenticated
            if was_signed_in:
                auth.logout(request)
            return self._failure(self._provider_error(request, was_signed_in))
        if not (request.GET.get("code") and state):
            return self._failure("The identity provider's answer had no code.")
        if not isinstance(states, dict) or state not in states:
            # An old or replayed answer, or another browser's: start again.
            return self._failure("This sign-in had expired or was not started here.")
        code_verifier = states[state].get("code_verifier")
        nonce = states[state]["nonce"]
        del states[state]
        request.session.save()
        # Reloaded after the slow exchange, as the library does, so changes other tabs make to
        # the session meanwhile are kept.
        request.session = request.session.__class__(request.session.session_key)
        try:
            user = OidcBackend().authenticate_callback(
                request, nonce=nonce, code_verifier=code_verifier
            )
        except (ProviderUnavailable, requests.RequestException) as error:
            return _unavailable(request, error)
        except SuspiciousOperation as error:
            logger.warning("single sign-on answer refused: %s", error)
            return self._failure("The identity provider's answer could not be verified.")
        if user is None or not user.is_active:
            return self._failure(getattr(request, "sign_in_refused", "") or "")
        self.user = user
        response: HttpResponse = self.login_success()
        return response

    def _provider_error(self, request: HttpRequest, was_signed_in: bool) -> str:
        error = request.GET.get("error", "")
        if error in SIGN_IN_AGAIN:
            if was_signed_in:
                return f"Your session at {settings.OIDC_PROVIDER_NAME} has ended: sign in again."
            return f"{settings.OIDC_PROVIDER_NAME} asks you to sign in again."
        description = request.GET.get("error_description", "")[:300]
        return f"{settings.OIDC_PROVIDER_NAME} refused the sign-in ({error[:60]}). {description}"

    def _failure(self, reason: str) -> HttpResponse:
        messages.error(
            self.request,
            reason
            or "Single sign-on did not succeed. Try again; if it persists, tell a portal admin.",
        )
        return redirect("login")


class LoginView(auth_views.LoginView):
    """The login page: "Sign in with <provider>" when single sign-on is configured, and the
    password form as ``LOCAL_LOGIN`` allows (all accounts, listed break-glass accounts, off)."""

    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)
        context["oidc_enabled"] = settings.OIDC_ENABLED
        context["oidc_provider_name"] = settings.OIDC_PROVIDER_NAME
        context["local_login"] = settings.LOCAL_LOGIN
        return context

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if settings.LOCAL_LOGIN == "off":
            refusal = (
                f"Signing in with a password is turned off: use {settings.OIDC_PROVIDER_NAME}."
            )
            context = self.get_context_data(form=AuthenticationForm(request), refusal=refusal)
            return self.render_to_response(context, status=403)
        response: HttpResponse = super().post(request, *args, **kwargs)
        return response


class LogoutView(auth_views.LogoutView):
    """Signs out of the portal and, for a single sign-on session whose provider publishes an
    end_session_endpoint, of the provider too (RP-initiated logout, with the ID token as hint;
    the provider then returns to the login page, which it must know as a post-logout
    redirect URI)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        provider_logout = self._provider_logout_url(request)
        response: HttpResponse = super().post(request, *args, **kwargs)
        return HttpResponseRedirect(provider_logout) if provider_logout else response

    def _provider_logout_url(self, request: HttpRequest) -> str:
        if not settings.OIDC_ENABLED or not isinstance(
            request.session.get(auth.BACKEND_SESSION_KEY), str
        ):
            return ""
        if request.session[auth.BACKEND_SESSION_KEY] != f"{OidcBackend.__module__}.OidcBackend":
            return ""
        try:
            endpoint = end_session_endpoint()
        except ProviderUnavailable as error:
            logger.warning("no sign-out at the identity provider: %s", error)
            return ""
        if not endpoint:
            return ""
        params = {
            "client_id": settings.OIDC_RP_CLIENT_ID,
            "post_logout_redirect_uri": request.build_absolute_uri(reverse("login")),
        }
        id_token = request.session.get("oidc_id_token")
        if isinstance(id_token, str):
            params["id_token_hint"] = id_token
        separator = "&" if "?" in endpoint else "?"
        return f"{endpoint}{separator}{urlencode(params)}"
