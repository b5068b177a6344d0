"""``{% load portal_format %}``: device memory as a Kubernetes quantity (``{{ bytes|quantity }}``
→ ``80Gi``; ``|rough_quantity`` for usage: ``318.6Gi``) and durations the way they are typed
(``{{ lease|duration }}`` → ``7d``); blank limits read "unlimited"."""

from __future__ import annotations

import datetime as dt

from django import template

from portal.durations import format_duration
from portal.quantities import format_bytes, format_bytes_roughly

register = template.Library()


@register.filter
def quantity(value: int | None, blank: str = "unlimited") -> str:
    return blank if value is None else format_bytes(int(value))


@register.filter
def rough_quantity(value: int | None, blank: str = "unlimited") -> str:
    """Usage, read not typed: ``318.6Gi`` rather than ``326236Mi`` (exact in a tooltip)."""
    return blank if value is None else format_bytes_roughly(int(value))


@register.filter
def duration(value: dt.timedelta | None, blank: str = "unlimited") -> str:
    return blank if value is None else format_duration(value)
