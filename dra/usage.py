"""What is in use: the devices allocation results hold, the capacity shares consume, and the
counters allocated devices take from their counter sets.

The allocator starts every search from this state, and the portal's device states are derived
from the same functions (``dra.allocator.availability``), so "free" on a page means free to the
allocator.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from dra.model import AllocatedDevice, CounterSet, Device, ResourceSlice

__all__ = [
    "AllocatedState",
    "CounterTotals",
    "DeviceKey",
    "available_counters",
    "consumption_of",
    "counter_shortfall",
]

DeviceKey = tuple[str, str, str]  # driver, pool, device name
# counter set name → counter name → amount
CounterTotals = dict[str, dict[str, Fraction]]


@dataclass(slots=True)
class AllocatedState:
    """Devices in use in the cluster, derived from already-allocated claims.

    ``in_use`` holds devices a result takes whole; ``consumed`` the capacity that shares
    (results with a ``shareID``, consumable capacity) take of multi-allocatable devices.
    Admin-access results hold nothing.
    """

    in_use: set[DeviceKey] = field(default_factory=set)
    consumed: dict[DeviceKey, dict[str, Fraction]] = field(default_factory=dict)

    @classmethod
    def from_results(
        cls, results: Iterable[AllocatedDevice], consumable_capacity: bool
    ) -> AllocatedState:
        state = cls()
        for result in results:
            if result.admin_access:
                continue
            key = (result.driver, result.pool, result.device)
            if consumable_capacity and result.share_id:
                totals = state.consumed.setdefault(key, {})
                for name, amount in result.consumed_capacity.items():
                    totals[name] = totals.get(name, Fraction(0)) + amount.value
                continue
            state.in_use.add(key)
        return state

    def is_allocated(self, key: DeviceKey) -> bool:
        """Whether any result (whole or share) holds the device: its counters are taken."""
        return key in self.in_use or key in self.consumed


def available_counters(
    counter_sets: Iterable[CounterSet],
    slices: Sequence[ResourceSlice],
    allocated: AllocatedState,
    shares_hold_counters: bool = True,
) -> CounterTotals:
    """What the counter sets have left once the allocated devices of ``slices`` took theirs
    (a device held only by shares counts when ``shares_hold_counters``, as from 1.36).

    A device consuming from a set that is not in ``counter_sets`` is ignored here (the pool is
    invalid then, and refused before counters matter). Amounts may go negative when the
    cluster holds more than the sets offer.
    """
    available: CounterTotals = {
        item.name: {name: quantity.value for name, quantity in item.counters.items()}
        for item in counter_sets
    }
    for resource_slice in slices:
        for device in resource_slice.devices:
            key = (resource_slice.driver, resource_slice.pool_name, device.name)
            held = allocated.is_allocated(key) if shares_hold_counters else key in allocated.in_use
            if not held:
                continue
            for consumption in device.consumes_counters:
                counters = available.get(consumption.counter_set)
                if counters is None:
                    continue
                for name, amount in consumption.counters.items():
                    if name in counters:
                        counters[name] -= amount.value
    return available


def counter_shortfall(
    available: Mapping[str, Mapping[str, Fraction | int]],
    wanted: Mapping[str, Mapping[str, Fraction | int]],
) -> list[tuple[str, str]]:
    """The (counter set, counter) pairs of which ``wanted`` takes more than is ``available``.

    Every counter of the scope is checked, not only the wanted ones, as the scheduler does: a
    scope already overcommitted admits nothing more.
    """
    return [
        (set_name, name)
        for set_name, counters in available.items()
        for name, left in counters.items()
        if left < wanted.get(set_name, {}).get(name, 0)
    ]


def consumption_of(device: Device) -> CounterTotals:
    """The counters one device takes, per counter set."""
    totals: CounterTotals = {}
    for consumption in device.consumes_counters:
        counters = totals.setdefault(consumption.counter_set, {})
        for name, amount in consumption.counters.items():
            counters[name] = counters.get(name, Fraction(0)) + amount.value
    return totals
