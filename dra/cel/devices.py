"""Devices as selectors see them: the values of ``device.*`` a selector may read."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dra.cel.environment import quantity_value, semver_value
from dra.cel.reads import ReadPath
from dra.model import AttributeValue, Device, qualify
from dra.quantity import Quantity
from dra.semver import SemverError, parse_semver

# --- devices as selectors see them -------------------------------------------------------------


@dataclass(slots=True)
class DeviceInput:
    """What a selector can read of one device, in both hashable and CEL form."""

    driver: str
    attributes: dict[str, dict[str, AttributeValue]]
    capacity: dict[str, dict[str, Quantity]]
    allow_multiple_allocations: bool
    conversion_error: str | None
    cel_attributes: dict[str, dict[str, Any]] = field(default_factory=dict)
    cel_capacity: dict[str, dict[str, Any]] = field(default_factory=dict)
    _content_key: tuple[Any, ...] | None = None
    memo: dict[str, bool | str] = field(default_factory=dict)  # expression → result
    # Go's URL rules of the Kubernetes version evaluated for (``dra.cel.gourl.url_rules``).
    strict_host_colons: bool = True

    def content_key(self) -> tuple[Any, ...]:
        """Everything a selector could observe, for expressions read as a whole."""
        if self._content_key is None:
            self._content_key = (
                self.driver,
                self.allow_multiple_allocations,
                tuple(sorted((d, tuple(sorted(v.items()))) for d, v in self.attributes.items())),
                tuple(sorted((d, tuple(sorted(v.items()))) for d, v in self.capacity.items())),
            )
        return self._content_key


def device_input(
    device: Device,
    driver: str,
    expose_multiple_allocations: bool,
    *,
    strict_host_colons: bool = True,
) -> DeviceInput:
    """Group a device's attributes and capacity by domain (unqualified names → the driver's)."""
    attributes: dict[str, dict[str, AttributeValue]] = {}
    cel_attributes: dict[str, dict[str, Any]] = {}
    conversion_error = None
    for name, value in device.attributes.items():
        domain, identifier = qualify(name, driver)
        attributes.setdefault(domain, {})[identifier] = value
        kind, raw = value
        converted: Any = raw
        if kind == "version":
            try:
                converted = semver_value(parse_semver(str(raw)))
            except SemverError as error:
                conversion_error = f"attribute {name}: parse semantic version: {error}"
        elif kind not in ("int", "bool", "string"):
            conversion_error = f"attribute {name}: unsupported attribute value"
        cel_attributes.setdefault(domain, {})[identifier] = converted
    capacity: dict[str, dict[str, Quantity]] = {}
    cel_capacity: dict[str, dict[str, Any]] = {}
    for name, device_capacity in device.capacity.items():
        domain, identifier = qualify(name, driver)
        capacity.setdefault(domain, {})[identifier] = device_capacity.value
        cel_capacity.setdefault(domain, {})[identifier] = quantity_value(device_capacity.value)
    allow_multiple = bool(device.allow_multiple_allocations) and expose_multiple_allocations
    return DeviceInput(
        driver,
        attributes,
        capacity,
        allow_multiple,
        conversion_error,
        cel_attributes,
        cel_capacity,
        strict_host_colons=strict_host_colons,
    )


def input_from_reads(
    paths: Sequence[ReadPath],
    values: Sequence[Any],
    driver: str,
    allow_multiple_allocations: bool,
    *,
    strict_host_colons: bool = True,
) -> DeviceInput:
    """The view of a device holding only ``values`` at ``paths`` (driver, multi, attr and cap
    paths, as :func:`path_getter` reads them from the whole view, ``None`` for an absent one).

    A selector that reads exactly ``paths`` gets the answer it gets on the device's whole view
    (the result cache relies on the same fact), without the device's other values converted:
    a selector reading a value unique to each device needs one view per device. The caller
    makes sure the whole view has no conversion error.
    """
    attributes: dict[str, dict[str, AttributeValue]] = {}
    cel_attributes: dict[str, dict[str, Any]] = {}
    capacity: dict[str, dict[str, Quantity]] = {}
    cel_capacity: dict[str, dict[str, Any]] = {}
    for path, value in zip(paths, values, strict=True):
        kind = path[0]
        if value is None or kind not in ("attr", "cap"):
            continue
        domain, identifier = path[1], path[2]
        if kind == "attr":
            attributes.setdefault(domain, {})[identifier] = value
            value_kind, raw = value
            cel_attributes.setdefault(domain, {})[identifier] = (
                semver_value(parse_semver(str(raw))) if value_kind == "version" else raw
            )
        else:
            capacity.setdefault(domain, {})[identifier] = value
            cel_capacity.setdefault(domain, {})[identifier] = quantity_value(value)
    return DeviceInput(
        driver,
        attributes,
        capacity,
        allow_multiple_allocations,
        None,
        cel_attributes,
        cel_capacity,
        strict_host_colons=strict_host_colons,
    )


def path_getter(path: ReadPath) -> Callable[[DeviceInput], Any]:
    kind = path[0]
    if kind == "driver":
        return lambda device: device.driver
    if kind == "multi":
        return lambda device: device.allow_multiple_allocations
    if kind in ("attr", "cap"):
        domain, identifier = path[1], path[2]
        if kind == "attr":
            return lambda device: device.attributes.get(domain, {}).get(identifier)
        return lambda device: device.capacity.get(domain, {}).get(identifier)
    if kind in ("attrdomain", "capdomain"):
        domain = path[1]
        if kind == "attrdomain":
            return lambda device: _frozen(device.attributes.get(domain))
        return lambda device: _frozen(device.capacity.get(domain))
    if kind == "attrs":
        return lambda device: device.content_key()[2]
    if kind == "caps":
        return lambda device: device.content_key()[3]
    return DeviceInput.content_key


def _frozen(mapping: Mapping[str, Any] | None) -> tuple[Any, ...] | None:
    return None if mapping is None else tuple(sorted(mapping.items()))
