"""Template helpers of the inventory pages: state badges, bytes, attributes by name, and a
sparkline of utilisation."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from devices import tables
from devices.models import Device, DeviceState

register = template.Library()


@register.simple_tag
def state_badge(state: str, reason: str = "") -> str:
    """``{% state_badge device.state device.state_reason %}``: the badge, and why beneath."""
    return tables.state_badge(state, reason)


@register.filter
def human_bytes(value: int | None) -> str:
    return tables.human_bytes(value) or "—"


@register.filter
def attribute(device: Device, name: str) -> str:
    """A device attribute's value by its unqualified name or qualified by the driver."""
    for key in (name, f"{device.driver}/{name}"):
        entry = device.attributes.get(key)
        if isinstance(entry, dict) and entry:
            return str(next(iter(entry.values())))
    return ""


@register.filter
def partition_states(devices: Iterable[Device]) -> str:
    """``"2 allocated, 23 free"``: how many partitions are in each state."""
    counts = Counter(getattr(device, "state", "") for device in devices)
    order = [state.value for state in DeviceState]
    return ", ".join(
        f"{counts[state]} {DeviceState(state).label.lower()}" for state in order if counts[state]
    )


@register.simple_tag
def sparkline(
    points: Iterable[tuple[object, float | None]], width: int = 240, height: int = 36
) -> str:
    """A server-drawn SVG line of percentages (0–100) in order; gaps where a value is missing.
    Empty string for no values (the caller shows its own empty state)."""
    values = [value for _, value in points]
    if not any(v is not None for v in values):
        return ""
    step = width / max(len(values) - 1, 1)
    runs: list[list[str]] = [[]]
    for i, value in enumerate(values):
        if value is None:
            if runs[-1]:
                runs.append([])
            continue
        y = height - 2 - (min(max(value, 0.0), 100.0) / 100.0) * (height - 4)
        runs[-1].append(f"{i * step:.1f},{y:.1f}")
    lines = "".join(
        f'<polyline points="{" ".join(run)}" fill="none" stroke="currentColor" '
        'stroke-width="1.5" vector-effect="non-scaling-stroke"/>'
        if len(run) > 1
        else '<circle cx="{}" cy="{}" r="1.5" fill="currentColor"/>'.format(*run[0].split(","))
        for run in runs
        if run
    )
    known = [v for v in values if v is not None]
    average = sum(known) / len(known)
    label = (
        f"GPU utilisation: min {min(known):.0f} %, average {average:.0f} %, max {max(known):.0f} %"
    )
    return format_html(
        '<svg class="sparkline" viewBox="0 0 {} {}" width="100%" height="{}" role="img" '
        'aria-label="{}" preserveAspectRatio="none"><title>{}</title>{}</svg>',
        width,
        height,
        height,
        label,
        label,
        mark_safe(lines),  # noqa: S308 - numbers only, formatted above
    )
