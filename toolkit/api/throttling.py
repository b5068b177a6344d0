"""Request rates on the API: per user, and per client address for requests without valid
credentials.

DRF authenticates (and checks permissions) before it throttles, so a throttle never sees a
request whose credentials fail or that has none: every API endpoint needs a user, and such a
request is answered 401 first. The address rate is therefore charged during authentication:
:class:`~portal.api.authentication.ApiTokenAuthentication` charges a token that fails, and
:class:`~portal.api.authentication.UnauthenticatedRequests`, the last authentication class,
charges a request that no class authenticated. Beyond ``API_THROTTLE_ANON_RATE`` they get 429
with ``Retry-After`` instead of 401. Valid credentials are never charged to the address.

Rates are read from ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]`` on each request (DRF's own
throttles read them once, at import), so settings and tests can change them; ``None`` turns
one off. Counters live in the default cache: Redis in production, shared by every worker.
Addresses come from :func:`toolkit.client_address.client_address` (``TRUSTED_PROXY_COUNT``).
"""

from __future__ import annotations

from typing import Any, cast

from rest_framework import exceptions, throttling
from rest_framework.settings import api_settings

from toolkit.client_address import client_address

__all__ = ["UnauthenticatedRateThrottle", "UserRateThrottle", "charge_unauthenticated"]


class _CurrentRates:
    scope: str | None  # as on DRF's SimpleRateThrottle; each throttle below names its scope

    def get_rate(self) -> str | None:
        # "N/period" strings (or None) by scope; DRF's stub types the rates as numbers.
        rates = cast("dict[str | None, str | None]", api_settings.DEFAULT_THROTTLE_RATES)
        return rates.get(self.scope)


class UserRateThrottle(_CurrentRates, throttling.UserRateThrottle):
    pass


class UnauthenticatedRateThrottle(_CurrentRates, throttling.SimpleRateThrottle):
    """The ``anon`` rate, per client address. Unlike DRF's ``AnonRateThrottle`` it never reads
    ``request.user``: it runs while the user is being found."""

    scope = "anon"

    def get_cache_key(self, request: Any, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": client_address(request)}


def charge_unauthenticated(request: Any) -> None:
    """Counts a request without valid credentials against its address; raises ``Throttled``
    (429, ``Retry-After``) once the address is over the rate."""
    throttle = UnauthenticatedRateThrottle()
    # No view: the request is still being authenticated (get_cache_key never reads it).
    if not throttle.allow_request(request, None):  # type: ignore[arg-type]  # see above
        raise exceptions.Throttled(throttle.wait())
