"""Device availability as the allocator sees it: the state and reason the portal shows.

For every device of the given pools this answers what a request for exactly that device (no
selectors, no constraints, no tolerations, the default capacity) would meet in the allocator:

* **tainted** — a taint the request does not tolerate keeps the device out;
* **allocated** — a result holds the device whole (admin-access results observe and hold
  nothing), or shares have used up its capacity;
* **blocked** — the pool is unusable (invalid, incomplete, superseded by a newer generation), or
  the counters the device consumes are taken by allocated devices of its counter scope;
* **shared** — a multi-allocatable device with shares allocated and room for one more;
* **free** — none of the above: the allocator takes it.

It reuses the allocator's own pieces (pool building, counter arithmetic of ``dra.usage``, the
capacity rules), so the portal's "free" and the allocator's answer cannot drift apart.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction

from dra.allocator.pools import Pool, build_pool
from dra.allocator.search import Candidate, request_capacity_fits, untolerated_taints
from dra.features import Features
from dra.model import AllocatedDevice, CounterSet, Device, ExactRequest, ResourceSlice
from dra.quantity import Quantity
from dra.usage import AllocatedState, available_counters, consumption_of, counter_shortfall

__all__ = [
    "Availability",
    "Holding",
    "State",
    "counters_blocking",
    "device_availability",
    "usage_availability",
]

# A request for one device with nothing but the defaults.
_DEFAULT_REQUEST = ExactRequest(
    name="device",
    device_class_name="",
    selectors=(),
    allocation_mode="ExactCount",
    count=1,
    admin_access=None,
    tolerations=(),
    tolerations_raw=(),
    capacity_requests=None,
    has_capacity=False,
)
_NAMED = 3  # devices named in a "counters used by" reason before "and N more"


class State(StrEnum):
    FREE = "free"
    SHARED = "shared"
    ALLOCATED = "allocated"
    BLOCKED = "blocked"
    TAINTED = "tainted"


@dataclass(frozen=True, slots=True)
class Availability:
    state: State
    reason: str = ""

    @property
    def is_allocatable(self) -> bool:
        """Whether a default request for exactly this device is granted."""
        return self.state in (State.FREE, State.SHARED)


@dataclass(frozen=True, slots=True)
class Holding:
    """One allocation result of a claim, and how many consumers reserve that claim."""

    result: AllocatedDevice
    consumers: int = 0


SliceDevice = tuple[str, str]  # slice name, device name


def device_availability(
    slices: Iterable[ResourceSlice], holdings: Iterable[Holding], features: Features
) -> dict[SliceDevice, Availability]:
    """The availability of every device of ``slices``, keyed by (slice name, device name).

    ``slices`` must hold whole pools (every slice of each pool they touch); ``holdings`` the
    allocation results naming devices of those pools (others are ignored).
    """
    holdings = list(holdings)
    allocated = AllocatedState.from_results(
        (h.result for h in holdings), features.consumable_capacity
    )
    holders: dict[tuple[str, str, str], list[Holding]] = defaultdict(list)
    for holding in holdings:
        if not holding.result.admin_access:
            result = holding.result
            holders[(result.driver, result.pool, result.device)].append(holding)
    return _availability(slices, allocated, holders, features)


def usage_availability(
    slices: Iterable[ResourceSlice], allocated: AllocatedState, features: Features
) -> dict[SliceDevice, Availability]:
    """:func:`device_availability` from what is in use as the allocator holds it (a warm
    :class:`dra.allocator.Cluster`'s ``allocated``, which may include reservations not written
    yet): the same states for the same usage; the reasons cannot name or count the claims."""
    return _availability(slices, allocated, {}, features)


def _availability(
    slices: Iterable[ResourceSlice],
    allocated: AllocatedState,
    holders: dict[tuple[str, str, str], list[Holding]],
    features: Features,
) -> dict[SliceDevice, Availability]:
    pools: dict[tuple[str, str], list[ResourceSlice]] = defaultdict(list)
    for resource_slice in slices:
        pools[(resource_slice.driver, resource_slice.pool_name)].append(resource_slice)
    states: dict[SliceDevice, Availability] = {}
    for (driver, name), pool_slices in sorted(pools.items()):
        states.update(_pool_availability(driver, name, pool_slices, allocated, holders, features))
    return states


def _pool_availability(
    driver: str,
    name: str,
    slices: list[ResourceSlice],
    allocated: AllocatedState,
    holders: dict[tuple[str, str, str], list[Holding]],
    features: Features,
) -> dict[SliceDevice, Availability]:
    states: dict[SliceDevice, Availability] = {}
    newest = max(item.generation for item in slices)
    current = [item for item in slices if item.generation == newest]
    for item in slices:
        if item.generation < newest:
            reason = f"superseded: the driver publishes generation {newest} of pool {name}"
            for device in item.devices:
                states[(item.name, device.name)] = Availability(State.BLOCKED, reason)
    expected = current[0].resource_slice_count
    unusable = ""
    pool = build_pool(driver, name, list(current), features, None)
    if len(current) != expected and not features.is_1_34:
        unusable = f"pool incomplete: {len(current)} of {expected} slices published"
    elif pool.invalid:
        unusable = f"pool invalid: {pool.invalid_reason}"
    for item in current:
        for device in item.devices:
            key = (item.name, device.name)
            if unusable:
                states[key] = Availability(State.BLOCKED, unusable)
            elif item not in pool.slices:
                # A 1.35+ counter slice listing devices: the scheduler ignores its devices.
                states[key] = Availability(State.BLOCKED, "listed in a counter-set slice")
            else:
                states[key] = _device_availability(pool, item, device, allocated, holders, features)
    return states


def _device_availability(
    pool: Pool,
    resource_slice: ResourceSlice,
    device: Device,
    allocated: AllocatedState,
    holders: dict[tuple[str, str, str], list[Holding]],
    features: Features,
) -> Availability:
    key = (pool.driver, pool.name, device.name)
    taints = untolerated_taints(device, (), features)
    if features.device_taints and taints:
        return Availability(
            State.TAINTED,
            "taint " + ", ".join(f"{t.key}={t.value}:{t.effect}" for t in taints),
        )
    held = holders.get(key, [])
    if key in allocated.in_use:
        return Availability(State.ALLOCATED, _held_reason(held))
    if device.consumes_counters:
        if not features.partitionable_devices:
            return Availability(State.BLOCKED, "partitionable devices are not enabled")
        blocked_by = counters_blocking(pool, resource_slice, device, allocated)
        if blocked_by is not None:
            return Availability(State.BLOCKED, blocked_by)
    consumed = allocated.consumed.get(key)
    # Without consumption or a request policy a default request takes the whole capacity,
    # which always fits: only the others need the allocator's capacity rules.
    if features.consumable_capacity and (
        consumed or any(capacity.policy is not None for capacity in device.capacity.values())
    ):
        candidate = Candidate(pool, resource_slice, device)
        fits = request_capacity_fits(_DEFAULT_REQUEST, candidate, consumed or {}, {})
        if fits is None:
            shares = len(held)
            if shares:
                reason = f"capacity used up by {shares} share{'s' if shares != 1 else ''}"
            elif consumed:
                reason = "capacity used up by its shares"
            else:
                reason = "its capacity policy refuses a default request"
            return Availability(State.ALLOCATED, reason)
    if consumed:
        return Availability(State.SHARED, _shares_reason(device, consumed, len(held)))
    return Availability(State.FREE)


def _held_reason(held: list[Holding]) -> str:
    if not held:
        return "in use"
    claims = len(held)
    consumers = sum(h.consumers for h in held)
    text = f"held by {claims} claim{'s' if claims != 1 else ''}"
    if consumers > 1:
        text += f", reserved for {consumers} consumers (shared claim)"
    return text


def _shares_reason(device: Device, consumed: dict[str, Fraction], shares: int) -> str:
    used = []
    for name, amount in sorted(consumed.items()):
        capacity = device.capacity.get(name)
        if capacity is None:
            continue
        total = capacity.value
        used.append(f"{name} {Quantity(amount, total.format)} of {total} used")
    head = f"{shares} share{'s' if shares != 1 else ''}"
    return f"{head}: {', '.join(used)}" if used else head


def counters_blocking(
    pool: Pool, resource_slice: ResourceSlice, device: Device, allocated: AllocatedState
) -> str | None:
    """Why the device's counters do not fit, naming the allocated devices that took them;
    None when they fit."""
    sets: Sequence[CounterSet]
    if pool.counter_sets is None:  # 1.34: counter sets live in the device's own slice
        sets, scope = resource_slice.shared_counters, [resource_slice]
    else:
        sets, scope = tuple(pool.counter_sets.values()), pool.slices + pool.other_slices
    available = available_counters(sets, scope, allocated)
    short = counter_shortfall(available, consumption_of(device))
    if not short:
        return None
    takers = sorted(
        {
            other.name
            for item in scope
            for other in item.devices
            if allocated.is_allocated((item.driver, item.pool_name, other.name))
            and any(name in consumption_of(other).get(set_name, {}) for set_name, name in short)
        }
    )
    if not takers:
        counters = ", ".join(f"{set_name}/{name}" for set_name, name in short[:_NAMED])
        return f"counters {counters} are overcommitted"
    named = ", ".join(takers[:_NAMED])
    more = f" and {len(takers) - _NAMED} more" if len(takers) > _NAMED else ""
    return f"counters used by {named}{more}"
