"""Template helpers of the inventory pages: state badges, bytes, attributes by name."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from django import template

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
