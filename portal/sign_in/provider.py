"""The OpenID provider's endpoints, from its discovery document (``OIDC_ISSUER``).

mozilla-django-oidc reads each endpoint as a setting (``OIDC_OP_*``); :func:`oidc_setting`
answers those from ``{issuer}/.well-known/openid-configuration``, fetched on first use and kept
for an hour per process, and every other name from Django's settings. Nothing is fetched at
start, so the portal starts while the provider is away; sign-in then says so.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import requests
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

__all__ = [
    "ProviderUnavailable",
    "end_session_endpoint",
    "forget_metadata",
    "metadata",
    "oidc_setting",
]

METADATA_SECONDS = 3600
ENDPOINT_SETTINGS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
_cache: dict[str, tuple[float, dict[str, Any]]] = {}
_lock = threading.Lock()


class ProviderUnavailable(Exception):
    """The identity provider cannot be reached or answered something unusable; the message
    says which, for the sign-in page."""


def forget_metadata() -> None:
    """Drops the cached discovery documents (tests; a provider that moved its endpoints)."""
    with _lock:
        _cache.clear()


def metadata() -> dict[str, Any]:
    """The provider's discovery document. Raises ``ProviderUnavailable``."""
    issuer = settings.OIDC_ISSUER
    if not issuer:
        raise ImproperlyConfigured("Single sign-on is off (OIDC_ISSUER is not set).")
    now = time.monotonic()
    with _lock:
        cached = _cache.get(issuer)
    if cached is not None and cached[0] > now:
        return cached[1]
    url = f"{issuer.rstrip('/')}/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as error:
        raise ProviderUnavailable(
            f"Its discovery document ({url}) could not be read: {error}"
        ) from error
    if not isinstance(document, dict) or document.get("issuer") != issuer:
        found = document.get("issuer") if isinstance(document, dict) else None
        # OpenID Connect Discovery 1.0 §4.3: the document must name the issuer it was asked for.
        raise ProviderUnavailable(
            f"Its discovery document names issuer {found!r}, not OIDC_ISSUER {issuer!r}."
        )
    missing = [key for key in ENDPOINT_SETTINGS.values() if not document.get(key)]
    if missing:
        raise ProviderUnavailable(f"Its discovery document lacks {', '.join(missing)}.")
    with _lock:
        _cache[issuer] = (now + METADATA_SECONDS, document)
    return document


def oidc_setting(name: str, *default: Any) -> Any:
    """A mozilla-django-oidc setting: the provider's endpoints from discovery, the rest from
    Django's settings (``default`` when unset). Raises ``ProviderUnavailable``."""
    if name in ENDPOINT_SETTINGS:
        return metadata()[ENDPOINT_SETTINGS[name]]
    if default:
        return getattr(settings, name, default[0])
    return getattr(settings, name)


def end_session_endpoint() -> str:
    """Where the provider signs a person out (RP-initiated logout): ``OIDC_END_SESSION_URL``,
    else the discovery document's ``end_session_endpoint``; empty when it has none."""
    if settings.OIDC_END_SESSION_URL:
        return str(settings.OIDC_END_SESSION_URL)
    return str(metadata().get("end_session_endpoint") or "")
