"""django-axes' hooks: the answer to a locked-out sign-in (``AXES_LOCKOUT_CALLABLE``) and
which sign-ins it counts (``AXES_WHITELIST_CALLABLE``)."""

from __future__ import annotations

from typing import Any

from axes.helpers import get_client_username
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.timesince import timeuntil

from portal.middleware import api_error, is_api_request

__all__ = ["is_not_a_password_sign_in", "lockout_response"]

TEMPLATE = "registration/locked_out.html"


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None, credentials: Any
) -> HttpResponse:
    """429 with ``Retry-After`` (the cool-off): the lockout page, or under ``/api/`` (and for
    scripts that ask with ``X-Requested-With: XMLHttpRequest``) the API's error format with
    code ``locked_out``."""
    cool_off = settings.AXES_COOLOFF_TIME
    now = timezone.now()
    wait = timeuntil(now + cool_off, now)
    username = get_client_username(request, credentials) or ""
    response: HttpResponse
    if is_api_request(request) or request.headers.get("X-Requested-With") == "XMLHttpRequest":
        response = api_error(
            429,
            f"Too many failed sign-ins for this username from your address: locked out for "
            f"{wait}; each try meanwhile starts the wait again.",
            code="locked_out",
        )
    else:
        context = {"username": username, "wait": wait, "limit": settings.AXES_FAILURE_LIMIT}
        response = render(request, TEMPLATE, context, status=429)
    response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response


def is_not_a_password_sign_in(request: HttpRequest, credentials: dict[str, Any] | None) -> bool:
    """Whether axes should leave this sign-in alone: only password sign-ins are counted and
    locked out. Another backend's attempt (a single sign-on callback, with a code and no
    password) has no username to lock, and counting its failures per address would lock
    everyone behind that address out of single sign-on."""
    return credentials is not None and credentials.get("password") is None
