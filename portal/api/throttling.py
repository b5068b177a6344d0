"""Per-user (and per-address for anonymous) request rates on the API.

DRF's throttles read their rates once, when their module is imported; these read
``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]`` on each request, so settings (and tests)
can change them. Counters live in the default cache: Redis in production, shared by every
worker. A throttled request is a 429 in the API's error format with ``Retry-After``.
"""

from __future__ import annotations

from rest_framework import throttling
from rest_framework.settings import api_settings

__all__ = ["AnonRateThrottle", "UserRateThrottle"]


class _CurrentRates:
    scope: str

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class UserRateThrottle(_CurrentRates, throttling.UserRateThrottle):
    pass


class AnonRateThrottle(_CurrentRates, throttling.AnonRateThrottle):
    pass
