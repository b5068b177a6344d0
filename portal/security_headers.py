"""The Content-Security-Policy (django-csp) and Permissions-Policy (django-permissions-policy)
the portal sends; ``portal.settings`` reads them from here.

Every page, the admin, the API documentation and the error pages satisfy one strict policy:
scripts, styles, fonts and images come from the portal itself (static files), nothing inline
(no script element without ``src``, no ``style`` attribute or style element, no ``on…=``
handler), no ``eval`` (htmx runs with ``allowEval`` off, ``static/js/portal.js``), no plugins,
no framing. ``data:`` images are allowed for the vendored stylesheets' inline SVG icons
(Bootstrap's select arrows and toggler, Swagger UI's). Forms submit to the portal only, plus
the identity provider's origins: a sign-out that POSTs and is redirected to the IdP counts as a
form submission to it (Chrome checks ``form-action`` across redirects).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

__all__ = [
    "PERMISSIONS_POLICY",
    "content_security_policy",
    "identity_provider_origins",
    "origin_of",
]

# Every powerful feature off; the portal only writes to the clipboard (the copy buttons).
# Chrome logs a name it does not know as an error on every page (156 knows no
# ambient-light-sensor, bluetooth or web-share): the browser test fails on that.
_FEATURES_OFF = [
    "accelerometer",
    "autoplay",
    "browsing-topics",
    "camera",
    "clipboard-read",
    "display-capture",
    "encrypted-media",
    "fullscreen",
    "gamepad",
    "geolocation",
    "gyroscope",
    "hid",
    "idle-detection",
    "local-fonts",
    "magnetometer",
    "microphone",
    "midi",
    "otp-credentials",
    "payment",
    "picture-in-picture",
    "publickey-credentials-get",
    "screen-wake-lock",
    "serial",
    "usb",
    "window-management",
    "xr-spatial-tracking",
]
PERMISSIONS_POLICY: dict[str, list[str]] = {feature: [] for feature in _FEATURES_OFF} | {
    "clipboard-write": ["self"]
}


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL; None for anything else."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def identity_provider_origins(environment: Mapping[str, str]) -> list[str]:
    """The origins of every ``OIDC_*`` variable that holds an http(s) URL (the IdP's
    endpoints), sorted: where a sign-in or sign-out form may end up."""
    origins = {
        origin
        for name, value in environment.items()
        if name.startswith("OIDC_") and (origin := origin_of(value))
    }
    return sorted(origins)


def content_security_policy(
    *, form_action: Iterable[str] = (), report_uri: str = ""
) -> dict[str, Any]:
    """django-csp's policy: strict, plus the given extra ``form-action`` origins (each must be
    an origin, ``https://idp.example.com``) and an optional ``report-uri``."""
    extra = []
    for value in form_action:
        origin = origin_of(value)
        parts = urlsplit(value)
        if origin is None or parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ImproperlyConfigured(
                f"CSP_FORM_ACTION: {value!r} is not an origin (e.g. https://idp.example.com)."
            )
        extra.append(origin)
    directives: dict[str, Any] = {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "frame-ancestors": [NONE],
        "form-action": [SELF, *sorted(set(extra))],
    }
    if report_uri:
        directives["report-uri"] = [report_uri]
    return {"DIRECTIVES": directives}
