"""Feature flags and the Kubernetes version whose allocator behaviour is reproduced.

The seven flags are the allocator's feature struct of Kubernetes 1.34 (names as in the
``manage.py allocate`` contract). ``kubernetesVersion`` switches the documented version
differences (dra-semantics §16); when omitted the newest known behaviour applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "FEATURE_NAMES",
    "NEWEST_VERSION",
    "OLDEST_VERSION",
    "PORTAL_FEATURES",
    "FeatureError",
    "Features",
    "parse_features",
    "parse_version",
]

FEATURE_NAMES = (
    "adminAccess",
    "prioritizedList",
    "partitionableDevices",
    "consumableCapacity",
    "deviceTaints",
    "deviceBinding",
    "deviceStatus",
)

NEWEST_VERSION = (1, 36)
OLDEST_VERSION = (1, 34)

Variant = Literal["stable", "incubating", "experimental"]


@dataclass(frozen=True, slots=True)
class Features:
    """Enabled allocator features plus the emulated Kubernetes minor version."""

    admin_access: bool = False
    prioritized_list: bool = False
    partitionable_devices: bool = False
    consumable_capacity: bool = False
    device_taints: bool = False
    device_binding: bool = False
    device_status: bool = False
    version: tuple[int, int] = NEWEST_VERSION

    @property
    def binding_and_status(self) -> bool:
        """Devices with binding conditions are usable only when both gates are on."""
        return self.device_binding and self.device_status

    @property
    def is_1_34(self) -> bool:
        return self.version <= (1, 34)

    @property
    def newest_variant(self) -> bool:
        """Whether upstream picks the implementation that has the newest checks.

        In 1.34 that is the experimental one. From 1.35 it is the one picked whenever
        consumable capacity, or binding conditions with device status, is on (1.35's
        experimental, 1.36's incubating or experimental). The stable implementation picked
        otherwise lacks these checks:
        - ``distinctAttribute`` (a claim naming one is an error: "empty constraint");
        - refusing capacity requests while consumable capacity is off;
        - ``allowMultipleAllocations`` in CEL (always false there);
        - putting pools with binding conditions last;
        - ``bindsToNode``.
        """
        if self.is_1_34:
            return self.variant == "experimental"
        return self.consumable_capacity or self.binding_and_status

    @property
    def distinct_attribute(self) -> bool:
        """Whether ``distinctAttribute`` constraints are known (see :attr:`newest_variant`)."""
        return self.newest_variant

    @property
    def clean_rollback(self) -> bool:
        """Whether a device that is refused after its checks began is rolled back whole (its
        counters, its mark as allocating, its constraint values), as 1.36's
        ``rollbackDevice`` does on every rejection path. Before, a device refused for a
        taint kept its counters reserved and one refused for capacity stayed marked."""
        return self.version >= (1, 36)

    @property
    def shares_skip_counters(self) -> bool:
        """Whether taking one more share of a device that already holds shares leaves its
        counters alone (``skipCounterCheck``, 1.35 on): the device consumes them once."""
        return not self.is_1_34

    @property
    def shares_hold_counters(self) -> bool:
        """Whether a device held only by shares (consumable capacity) has taken its counters
        when the allocator counts what the sets have left: 1.36's ``IsDeviceAllocated``
        counts shares; before, only devices allocated whole did."""
        return self.version >= (1, 36)

    @property
    def strict_url_host_colons(self) -> bool:
        """Built with Go 1.26 or newer (Kubernetes 1.36 on), whose ``net/url`` refuses a
        colon in a host other than the port's (``dra.cel.gourl``)."""
        return self.version >= (1, 36)

    @property
    def variant(self) -> Variant:
        """Which of upstream's three allocator implementations 1.34 would pick.

        1.34 picks the most stable implementation that supports every enabled feature; a few
        checks (capacity requests while consumable capacity is off, ``distinctAttribute``,
        ``allowMultipleAllocations`` in CEL, binding-condition ordering, ``bindsToNode``) exist
        only in the experimental one (dra-semantics §15.8). For 1.35 and later this answers
        "experimental"; which checks apply there is :attr:`newest_variant`'s question.
        """
        if not self.is_1_34:
            return "experimental"
        if self.consumable_capacity or self.device_binding or self.device_status:
            return "experimental"
        if (
            self.admin_access
            or self.prioritized_list
            or self.partitionable_devices
            or self.device_taints
        ):
            return "incubating"
        return "stable"


# What a current cluster (the newest version the allocator knows) runs with: the assumptions
# of the portal's device states, its allocation index and the demo's scheduler. Binding
# conditions and device status stay off: nothing in the portal drives them.
PORTAL_FEATURES = Features(
    admin_access=True,
    prioritized_list=True,
    partitionable_devices=True,
    consumable_capacity=True,
    device_taints=True,
)


class FeatureError(ValueError):
    """Malformed ``features`` or ``kubernetesVersion``."""


def parse_version(value: Any) -> tuple[int, int]:
    """``"1.35"`` (or ``"v1.35.2"``) → (1, 35); None → newest.

    Versions before 1.34 are refused rather than emulated: ``resource.k8s.io/v1``, the only API
    version the contract speaks, is served from Kubernetes 1.34 on, so an older cluster could not
    have sent these objects.
    """
    if value is None:
        return NEWEST_VERSION
    if not isinstance(value, str):
        raise FeatureError(f'kubernetesVersion: must be a string like "1.35", not {value!r}')
    parts = value.strip().removeprefix("v").split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        raise FeatureError(f'kubernetesVersion: must look like "1.35", not {value!r}') from None
    if major != 1 or minor < OLDEST_VERSION[1]:
        oldest = ".".join(map(str, OLDEST_VERSION))
        raise FeatureError(
            f"kubernetesVersion: {value!r} is not supported: DRA's resource.k8s.io/v1 API needs "
            f"Kubernetes {oldest} or newer"
        )
    return (major, minor)


def parse_features(raw: Any, version: tuple[int, int] = NEWEST_VERSION) -> Features:
    """Build :class:`Features` from the contract's ``features`` object.

    Omitted flags are off. An unknown name is refused: a misspelt flag silently left off would
    change the answer without saying so.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise FeatureError("features: must be an object")
    unknown = sorted(str(name) for name in raw if name not in FEATURE_NAMES)
    if unknown:
        raise FeatureError(
            f"features: unknown feature {', '.join(map(repr, unknown))} "
            f"(known: {', '.join(FEATURE_NAMES)})"
        )
    values: dict[str, bool] = {}
    for name, enabled in raw.items():
        if not isinstance(enabled, bool):
            raise FeatureError(f"features.{name}: must be true or false")
        values[name] = enabled
    return Features(
        admin_access=values.get("adminAccess", False),
        prioritized_list=values.get("prioritizedList", False),
        partitionable_devices=values.get("partitionableDevices", False),
        consumable_capacity=values.get("consumableCapacity", False),
        device_taints=values.get("deviceTaints", False),
        device_binding=values.get("deviceBinding", False),
        device_status=values.get("deviceStatus", False),
        version=version,
    )
