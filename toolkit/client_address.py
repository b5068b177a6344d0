"""The address a request came from: one rule for the API's rate limits and sign-in lockouts.

Without a trusted proxy (``TRUSTED_PROXY_COUNT = 0``, the default) it is ``REMOTE_ADDR``:
``X-Forwarded-For`` is written by the client and ignored, so a forged header can neither open
a fresh count nor lock someone else out. Behind ``n`` reverse proxies that each append the
address they received from to ``X-Forwarded-For`` (an ingress controller, a load balancer),
it is the ``n``-th address from the right: the one the outermost trusted proxy saw. What the
client wrote further left is ignored.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

__all__ = ["client_address"]


def client_address(request: Any) -> str:
    """The client's address (see the module); "" when the server gave none."""
    meta = request.META
    remote = str(meta.get("REMOTE_ADDR") or "")
    proxies = settings.TRUSTED_PROXY_COUNT
    forwarded = [part.strip() for part in str(meta.get("HTTP_X_FORWARDED_FOR", "")).split(",")]
    forwarded = [part for part in forwarded if part]
    if proxies <= 0 or not forwarded:
        return remote
    return forwarded[-min(proxies, len(forwarded))]
