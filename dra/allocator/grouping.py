"""Grouping keys of devices read straight from the parsed devices, without a DeviceInput each.

The cluster index groups every device by the values a selector reads, so the selector runs once
per group. Building the selector view (:func:`dra.cel.device_input`) of all 50,000 devices of a
5,000-node case costs more than the whole search; the key only needs the few values read. For
selectors that read the driver, ``allowMultipleAllocations`` and single attributes or capacities
(what class and request selectors read), :func:`grouping_key_reader` reads them from
``Device.attributes`` / ``Device.capacity`` with the same qualification (the last name that
qualifies to ``domain/identifier`` wins, as in ``device_input``), and spots the devices whose
view would carry a conversion error (an unsupported attribute kind, a version that is not
semver), which form groups of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dra.model import Device, ResourceSlice, qualify
from dra.semver import SemverError, parse_semver

__all__ = ["GroupingKey", "grouping_key_reader"]

GroupingKey = Callable[[ResourceSlice, Device], tuple[Any, ...] | None]

_READ_DIRECTLY = frozenset({"driver", "multi", "attr", "cap"})
_PLAIN_KINDS = frozenset({"int", "bool", "string"})
_VERSIONS_LIMIT = 4096
_valid_versions: set[str] = set()


def _is_semver(text: Any) -> bool:
    text = str(text)
    if text in _valid_versions:
        return True
    try:
        parse_semver(text)
    except SemverError:
        return False
    if len(_valid_versions) >= _VERSIONS_LIMIT:
        _valid_versions.clear()
    _valid_versions.add(text)
    return True


def _converts(attributes: Mapping[str, tuple[str, Any]]) -> bool:
    """Whether every attribute converts to a CEL value (else the view has a conversion error)."""
    for kind, raw in attributes.values():
        if kind not in _PLAIN_KINDS and (kind != "version" or not _is_semver(raw)):
            return False
    return True


class _Names:
    """Per (driver, names in order): which name the view keeps for each (domain, identifier)."""

    def __init__(self) -> None:
        self._plans: dict[tuple[str, tuple[str, ...]], dict[tuple[str, str], str]] = {}

    def plan(self, driver: str, names: Mapping[str, Any]) -> dict[tuple[str, str], str]:
        key = (driver, tuple(names))
        plan = self._plans.get(key)
        if plan is None:
            plan = {}
            for name in names:
                plan[qualify(name, driver)] = name  # later names win, as in device_input
            self._plans[key] = plan
        return plan


def grouping_key_reader(
    paths: Sequence[tuple[str, ...]], expose_multiple_allocations: bool
) -> GroupingKey | None:
    """A function giving, for a device of a slice, the values of ``paths`` exactly as the path
    getters give them on its DeviceInput (None when that view has a conversion error); None
    when some path needs the whole view."""
    if any(path[0] not in _READ_DIRECTLY for path in paths):
        return None
    attribute_names = _Names()
    capacity_names = _Names()

    def key(resource_slice: ResourceSlice, device: Device) -> tuple[Any, ...] | None:
        attributes = device.attributes
        if not _converts(attributes):
            return None
        driver = resource_slice.driver
        capacity = device.capacity
        attribute_plan = capacity_plan = None
        values: list[Any] = []
        for path in paths:
            kind = path[0]
            if kind == "driver":
                values.append(driver)
            elif kind == "multi":
                values.append(
                    bool(device.allow_multiple_allocations) and expose_multiple_allocations
                )
            elif kind == "attr":
                if attribute_plan is None:
                    attribute_plan = attribute_names.plan(driver, attributes)
                name = attribute_plan.get((path[1], path[2]))
                values.append(None if name is None else attributes[name])
            else:
                if capacity_plan is None:
                    capacity_plan = capacity_names.plan(driver, capacity)
                name = capacity_plan.get((path[1], path[2]))
                values.append(None if name is None else capacity[name].value)
        return tuple(values)

    return key
