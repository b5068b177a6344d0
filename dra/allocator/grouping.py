"""Grouping keys of devices read straight from the parsed devices, without a DeviceInput each.

The cluster index groups every device by the values a selector reads, so the selector runs once
per group. Building the selector view (:func:`dra.cel.device_input`) of all 50,000 devices of a
5,000-node case costs more than the whole search; the key only needs the few values read. For
selectors that read the driver, ``allowMultipleAllocations`` and single attributes or capacities
(what class and request selectors read), :func:`grouping_key_reader` reads them from
``Device.attributes`` / ``Device.capacity`` with the same qualification (the last name that
qualifies to ``domain/identifier`` wins, as in ``device_input``), and spots the devices whose
view would carry a conversion error (an unsupported attribute kind, a version that is not
semver), which form groups of their own. :func:`grouped_input` then gives a group's selector
a view holding only those values, so a selector reading a value unique to every device (a
``uuid``) does not convert each device's other attributes and capacities.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dra.cel import DeviceInput, input_from_reads
from dra.model import Device, ResourceSlice
from dra.semver import SemverError, parse_semver

__all__ = ["GroupingKey", "grouped_input", "grouping_key_reader"]

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


def _spelled(names: Mapping[str, Any], full: str, short: str | None) -> str | None:
    """The name under which ``names`` holds an id: its full ``domain/id`` spelling or, for the
    driver's own domain, the bare id; with both present the later wins, as in device_input."""
    if full in names:
        if short is not None and short in names:
            order = list(names)
            return full if order.index(full) > order.index(short) else short
        return full
    if short is not None and short in names:
        return short
    return None


def grouping_key_reader(
    paths: Sequence[tuple[str, ...]], expose_multiple_allocations: bool
) -> GroupingKey | None:
    """A function giving, for a device of a slice, the values of ``paths`` exactly as the path
    getters give them on its DeviceInput (None when that view has a conversion error); None
    when some path needs the whole view."""
    if any(path[0] not in _READ_DIRECTLY for path in paths):
        return None
    # per path: (kind, domain, full spelling, bare spelling when it has one)
    plan = [
        (
            path[0],
            path[1] if len(path) > 2 else "",
            f"{path[1]}/{path[2]}" if len(path) > 2 else "",
            path[2] if len(path) > 2 and "/" not in path[2] else None,
        )
        for path in paths
    ]

    def key(resource_slice: ResourceSlice, device: Device) -> tuple[Any, ...] | None:
        attributes = device.attributes
        if not _converts(attributes):
            return None
        driver = resource_slice.driver
        values: list[Any] = []
        for kind, domain, full, short in plan:
            if kind == "driver":
                values.append(driver)
            elif kind == "multi":
                values.append(
                    bool(device.allow_multiple_allocations) and expose_multiple_allocations
                )
            elif kind == "attr":
                name = _spelled(attributes, full, short if domain == driver else None)
                values.append(None if name is None else attributes[name])
            else:
                capacity = device.capacity
                name = _spelled(capacity, full, short if domain == driver else None)
                values.append(None if name is None else capacity[name].value)
        return tuple(values)

    return key


def grouped_input(
    paths: Sequence[tuple[str, ...]],
    key: tuple[Any, ...],
    resource_slice: ResourceSlice,
    device: Device,
    expose_multiple_allocations: bool,
    strict_host_colons: bool,
) -> DeviceInput:
    """The selector view of a device holding only what a grouping key read (``key`` from
    :func:`grouping_key_reader` over the same ``paths``, never None)."""
    return input_from_reads(
        paths,
        key,
        resource_slice.driver,
        bool(device.allow_multiple_allocations) and expose_multiple_allocations,
        strict_host_colons=strict_host_colons,
    )
