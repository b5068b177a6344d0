"""Lease durations as people and the API write them: ``7d``, ``12h``, ``1d12h``, ``90m`` or ISO
8601 (``P7D``, ``PT12H``, ``P1DT12H``)."""

from __future__ import annotations

import re
from datetime import timedelta

__all__ = ["DurationError", "format_duration", "iso_duration", "parse_duration"]

_SHORT = re.compile(r"^(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
_ISO = re.compile(r"^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$")
_LIMIT = timedelta(days=3650)


class DurationError(ValueError):
    pass


def parse_duration(text: str) -> timedelta:
    """The duration ``text`` names; :class:`DurationError` says what is wrong with it."""
    value = text.strip()
    match = _ISO.match(value.upper()) if value[:1] in ("P", "p") else _SHORT.match(value.lower())
    if not value or match is None or not any(match.groups()):
        raise DurationError(
            f"'{text[:40]}' is not a duration: write e.g. 7d, 12h, 1d12h, 90m or P7D."
        )
    weeks, days, hours, minutes, seconds = (int(group or 0) for group in match.groups())
    duration = timedelta(weeks=weeks, days=days, hours=hours, minutes=minutes, seconds=seconds)
    if duration <= timedelta(0):
        raise DurationError("A duration must be longer than zero.")
    if duration > _LIMIT:
        raise DurationError("A duration must be at most 10 years.")
    return duration


def format_duration(duration: timedelta) -> str:
    """``7d``, ``1d12h``, ``90m`` → the short form, largest units first."""
    seconds = int(duration.total_seconds())
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(parts) or "0s"


def iso_duration(duration: timedelta) -> str:
    """ISO 8601: ``P7D``, ``PT12H``, ``P1DT12H``."""
    seconds = int(duration.total_seconds())
    days, seconds = divmod(seconds, 86400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    time = "".join(f"{n}{u}" for n, u in ((hours, "H"), (minutes, "M"), (seconds, "S")) if n)
    return (
        "P" + (f"{days}D" if days else "") + (f"T{time}" if time else "")
        if (days or time)
        else "PT0S"
    )
