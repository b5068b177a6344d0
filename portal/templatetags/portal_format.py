"""``{% load portal_format %}``: device memory as a Kubernetes quantity (``{{ bytes|quantity }}``
→ ``80Gi``) and durations the way they are typed (``{{ lease|duration }}`` → ``7d``); blank
limits read "unlimited"."""

from __future__ import annotations

import datetime as dt

from django import template

from portal.durations import format_duration
from portal.quantities import format_bytes

register = template.Library()


@register.filter
def quantity(value: int | None, blank: str = "unlimited") -> str:
    return blank if value is None else format_bytes(int(value))


@register.filter
def duration(value: dt.timedelta | None, blank: str = "unlimited") -> str:
    return blank if value is None else format_duration(value)
