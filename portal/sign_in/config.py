"""Checks of the sign-in settings, run by ``portal.settings`` so a bad value stops the start.

Imports no model (settings import it before the apps are ready).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

__all__ = ["LOCAL_LOGIN_MODES", "check_oidc_settings", "local_login_mode"]

# all: every active account may sign in with its password; listed: only LOCAL_LOGIN_USERS
# (break-glass accounts beside single sign-on); off: nobody (single sign-on only).
LOCAL_LOGIN_MODES = ("all", "listed", "off")
SIGNING_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "ES512", "HS256")


def local_login_mode(raw: str, *, oidc_enabled: bool, users: list[str]) -> str:
    """``LOCAL_LOGIN``, checked. Unset: ``all`` without single sign-on; with it, ``listed``
    when ``LOCAL_LOGIN_USERS`` names accounts, else ``off``."""
    mode = raw.strip().lower()
    if not mode:
        if not oidc_enabled:
            return "all"
        return "listed" if users else "off"
    if mode not in LOCAL_LOGIN_MODES:
        raise ImproperlyConfigured(
            f"LOCAL_LOGIN={raw!r} is not one of {', '.join(LOCAL_LOGIN_MODES)}."
        )
    if mode == "off" and not oidc_enabled:
        raise ImproperlyConfigured(
            "LOCAL_LOGIN=off without single sign-on (OIDC_ISSUER) would let nobody sign in."
        )
    if mode == "listed" and not users:
        raise ImproperlyConfigured(
            "LOCAL_LOGIN=listed needs LOCAL_LOGIN_USERS: the accounts that may sign in with a "
            "password (e.g. LOCAL_LOGIN_USERS=breakglass)."
        )
    return mode


def check_oidc_settings(
    *,
    issuer: str,
    client_id: str,
    client_secret: str,
    sign_algorithm: str,
    debug: bool,
) -> None:
    """Raises ``ImproperlyConfigured`` listing every problem of an OpenID Connect
    configuration (``issuer`` set); nothing to check while single sign-on is off."""
    if not issuer:
        return
    problems = []
    parts = urlsplit(issuer)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        problems.append(f"OIDC_ISSUER={issuer!r} is not an http(s) URL")
    elif parts.scheme != "https" and not debug:
        problems.append(f"OIDC_ISSUER={issuer!r} must use https in production (DEBUG=false)")
    if parts.query or parts.fragment:
        problems.append("OIDC_ISSUER may not have a query or fragment")
    if not client_id:
        problems.append("OIDC_CLIENT_ID is missing")
    if not client_secret:
        problems.append("OIDC_CLIENT_SECRET (or OIDC_CLIENT_SECRET_FILE) is missing")
    if sign_algorithm not in SIGNING_ALGORITHMS:
        problems.append(
            f"OIDC_SIGN_ALGORITHM={sign_algorithm!r} is not one of {', '.join(SIGNING_ALGORITHMS)}"
        )
    if problems:
        raise ImproperlyConfigured(
            "Single sign-on is configured (OIDC_ISSUER) but: "
            + "; ".join(problems)
            + ". See docs/sign-in.md."
        )
