"""The depth-first allocator for one node (dra-semantics §5, §6, §9–§12, §14).

:class:`NodeAllocation` mirrors one call of the scheduler's ``Allocate(node, claims)``: up-front
checks, then a depth-first search over claims → requests → device slots in pool/slice/device
order, first solution wins. ``allocate`` returns one :class:`ClaimAllocation` per claim, None
when the claims are unsatisfiable on this node, or raises :class:`AllocationError`.

Version switches: 1.34 errors when the search reaches an invalid pool and uses incomplete pools,
1.35+ skips both (an invalid pool turns "nothing found" into an error); 1.36 starts the next slot
of a request after the previous device (combination order), older versions restart from the
first device. Counters are reserved before the taint and constraint checks and are not released
when those reject the device, as upstream does.

Longer than the house's ~600 lines because it follows upstream's allocator line by line
(``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/*/allocator_*.go``):
one search, split the way upstream splits it, so a difference reads as a diff.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dra.allocator.constraints import ClaimConstraint, DistinctAttribute, MatchAttribute
from dra.allocator.pools import Inventory, Pool, device_matches_node, gather_pools
from dra.cel import CelCompileError, CelRuntimeError, DeviceInput, compile_selector, device_input
from dra.features import Features
from dra.model import (
    CapacityPolicy,
    Device,
    DeviceClass,
    DeviceRequest,
    ExactRequest,
    Node,
    ResourceClaim,
    ResourceSlice,
    Taint,
    Toleration,
)
from dra.quantity import Quantity
from dra.usage import AllocatedState, DeviceKey, available_counters, counter_shortfall

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "RESULTS_LIMIT",
    "AllocationError",
    "AllocationTimeout",
    "Deadline",
    "AllocatedState",
    "CaseData",
    "Candidate",
    "DeviceResult",
    "ClaimAllocation",
    "NodeAllocation",
    "request_capacity_fits",
    "untolerated_taints",
]

RESULTS_LIMIT = 32
_SHARE_NAMESPACE = uuid.UUID("5f0b5a0e-4a1f-4d6e-9a49-6d2d1b8f3c11")


class AllocationError(Exception):
    """The allocation attempt failed with an error (not merely unsatisfiable)."""


class AllocationTimeout(AllocationError):
    """The allocation ran past its wall-clock limit (see :class:`Deadline`)."""


class _ResultLimit(Exception):
    """A branch would exceed 32 results in a claim (upstream's special backtracking signal)."""


DEFAULT_TIMEOUT_SECONDS = 10.0
_CHECK_EVERY = 64


@dataclass(slots=True)
class Deadline:
    """The wall-clock limit of one allocation, as the scheduler bounds its DRA filter (10 s by
    default). The search loops call :meth:`check`; it reads the clock every 64 calls."""

    seconds: float
    expires: float
    calls: int = 0

    @classmethod
    def start(cls, seconds: float) -> Deadline:
        return cls(seconds, time.monotonic() + seconds)

    def check(self) -> None:
        """Raise :class:`AllocationTimeout` once the limit has passed."""
        self.calls += 1
        if self.calls % _CHECK_EVERY == 0 and time.monotonic() > self.expires:
            raise AllocationTimeout(
                "timed out trying to allocate devices: the allocation took longer than its "
                f"limit of {self.seconds:g} s"
            )


_Step = tuple[int, int, int, int, bool, tuple[int, int, int]]


@dataclass(slots=True)
class CaseData:
    """Everything one allocation case needs besides the node, parsed once."""

    features: Features
    classes: dict[str, DeviceClass]
    inventory: Inventory
    allocated: AllocatedState
    claims: list[ResourceClaim]
    inputs: dict[int, DeviceInput] = field(default_factory=dict)
    deadline: Deadline | None = None

    def input_for(self, resource_slice: ResourceSlice, device: Device) -> DeviceInput:
        cached = self.inputs.get(device.uid)
        if cached is None:
            expose = self.features.newest_variant
            cached = device_input(
                device,
                resource_slice.driver,
                expose,
                strict_host_colons=self.features.strict_url_host_colons,
            )
            self.inputs[device.uid] = cached
        return cached


@dataclass(slots=True)
class Candidate:
    pool: Pool
    slice: ResourceSlice
    device: Device

    @property
    def key(self) -> DeviceKey:
        return (self.pool.driver, self.pool.name, self.device.name)

    @property
    def label(self) -> str:
        return f"{self.pool.driver}/{self.pool.name}/{self.device.name}"


@dataclass(slots=True)
class _RequestData:
    request: ExactRequest
    parent: DeviceRequest | None
    device_class: DeviceClass | None = None
    num_devices: int = 0
    all_devices: list[Candidate] | None = None
    selected_sub: int = 0

    @property
    def name(self) -> str:
        if self.parent is not None:
            return f"{self.parent.name}/{self.request.name}"
        return self.request.name

    @property
    def base_name(self) -> str:
        return self.parent.name if self.parent is not None else self.request.name

    @property
    def sub_name(self) -> str | None:
        return self.request.name if self.parent is not None else None

    @property
    def admin_access(self) -> bool:
        return self.parent is None and bool(self.request.admin_access)


@dataclass(slots=True)
class DeviceResult:
    request: str
    candidate: Candidate
    admin_access: bool
    tolerations: tuple[Any, ...]
    share_id: str | None
    consumed_capacity: dict[str, Quantity] | None


@dataclass(slots=True)
class ClaimAllocation:
    """The search's outcome for one claim, before JSON assembly."""

    claim: ResourceClaim
    results: list[DeviceResult]
    chosen: list[_RequestData]  # per request: the request or its chosen subrequest


def _consumed_amount(
    requested: Quantity | None, value: Quantity, policy: CapacityPolicy | None
) -> Quantity:
    if requested is None:
        if policy is not None and policy.default is not None:
            return policy.default
        return value
    if policy is None:
        return requested
    if policy.has_range and policy.min is not None:
        if requested < policy.min:
            return policy.min
        if policy.step is None:
            return requested
        step, minimum = policy.step.ceil_int(), policy.min.ceil_int()
        added = requested.ceil_int() - minimum
        steps = -(-added // step) if step else 0
        # Upstream builds the rounded amount with resource.NewQuantity(…, BinarySI).
        return Quantity(Fraction(minimum + step * steps), "BinarySI")
    if policy.valid_values is not None:
        for valid in policy.valid_values:
            if requested <= valid:
                return valid
    return requested


def _violates_policy(amount: Quantity, policy: CapacityPolicy | None) -> bool:
    if policy is None:
        return False
    if policy.default is not None and amount == policy.default:
        return False
    if policy.has_range:
        if policy.max is not None and amount > policy.max:
            return True
        if policy.step is not None and policy.min is not None:
            step = policy.step.ceil_int()
            return bool(step) and (amount.ceil_int() - policy.min.ceil_int()) % step != 0
        return False
    if policy.valid_values:
        return amount not in policy.valid_values
    return False


def _exact(value: Fraction) -> Fraction | int:
    """A whole amount as an int (much faster to add and compare), others as they are."""
    return value.numerator if value.denominator == 1 else value


def _share_amounts(data: _RequestData, candidate: Candidate) -> dict[str, Quantity]:
    """What a share of the candidate takes of each of its capacities, unchecked (upstream's
    GetConsumedCapacityFromRequest)."""
    requested = data.request.capacity_requests or {}
    return {
        name: _consumed_amount(requested.get(name), capacity.value, capacity.policy)
        for name, capacity in candidate.device.capacity.items()
    }


def request_capacity_fits(
    request: ExactRequest,
    candidate: Candidate,
    consumed: dict[str, Fraction],
    allocating: dict[str, Fraction],
) -> dict[str, Quantity] | None:
    """Consumed capacity per device capacity if the request fits (§10), else None."""
    capacity = candidate.device.capacity
    requested = request.capacity_requests or {}
    # Names compare exactly (1.34 to 1.36): "gpu.example.com/mem" does not find "mem".
    if any(name not in capacity for name in requested):
        return None
    # The common case: a whole, untouched device. Without a policy a capacity consumes all
    # of itself, which fits; a policy's default is still checked below.
    if (
        not requested
        and not consumed
        and not allocating
        and all(item.policy is None for item in capacity.values())
    ):
        return {name: item.value for name, item in capacity.items()}
    result: dict[str, Quantity] = {}
    for name, device_capacity in capacity.items():
        amount = _consumed_amount(
            requested.get(name), device_capacity.value, device_capacity.policy
        )
        if _violates_policy(amount, device_capacity.policy):
            return None
        total = consumed.get(name, Fraction(0)) + amount.value + allocating.get(name, Fraction(0))
        if total > device_capacity.value.value:
            return None
        result[name] = amount
    return result


def untolerated_taints(
    device: Device, tolerations: Sequence[Toleration], features: Features
) -> list[Taint]:
    """The device's taints that keep a request with ``tolerations`` off it: every taint in
    1.34, only NoSchedule and NoExecute from 1.35 on."""
    if not device.taints:
        return []
    return [
        taint
        for taint in device.taints
        if (features.is_1_34 or taint.effect in ("NoSchedule", "NoExecute"))
        and not any(toleration.tolerates(taint) for toleration in tolerations)
    ]


class NodeAllocation:
    """One allocation attempt of all claims on one node."""

    def __init__(self, case: CaseData, node: Node, pools: list[Pool] | None = None) -> None:
        self.case = case
        self.features = case.features
        self.node = node
        self.pools = (
            pools if pools is not None else gather_pools(case.inventory, node, case.features)
        )
        self.claims = case.claims
        self.request_data: dict[tuple[int, int, int], _RequestData] = {}
        self.constraints: list[list[ClaimConstraint]] = []
        self.results: list[list[DeviceResult]] = [[] for _ in case.claims]
        self.allocating: dict[DeviceKey, set[int]] = {}
        self.allocating_capacity: dict[DeviceKey, dict[str, Fraction]] = {}
        self.consumed_counters: dict[Any, dict[str, dict[str, Fraction | int]]] = {}
        self.available_counters: dict[Any, dict[str, dict[str, Fraction | int]]] = {}
        self.over_budget: dict[Any, set[tuple[str, str]]] = {}
        self.draws: dict[int, list[tuple[str, str, Fraction | int]]] = {}
        self.matches: dict[tuple[int, int, int, int], bool] = {}
        self.combinations = self.features.version >= (1, 36)
        self.shares = 0

    # --- up-front checks -----------------------------------------------------------------------

    def _fail(self, message: str) -> AllocationError:
        return AllocationError(message)

    def _validate(
        self, claim_index: int, request_index: int, sub_index: int, data: _RequestData
    ) -> None:
        claim = self.claims[claim_index]
        request = data.request
        for number, selector in enumerate(request.selectors):
            if selector is None:
                raise self._fail(
                    f"claim {claim.key}, request {request.name}, selector #{number}: "
                    "CEL expression "
                    "empty (unsupported selector type?)"
                )
        if (
            not self.features.admin_access
            and data.parent is None
            and request.admin_access is not None
        ):
            raise self._fail(
                f"claim {claim.key}, request {request.name}: admin access is requested, but the "
                "feature is disabled"
            )
        if not request.device_class_name:
            raise self._fail(
                f"claim {claim.key}, request {request.name}: missing device class name "
                "(unsupported request type?)"
            )
        device_class = self.case.classes.get(request.device_class_name)
        if device_class is None:
            raise self._fail(
                f"claim {claim.key}, request {request.name}: could not retrieve device class "
                f"{request.device_class_name}: deviceclass.resource.k8s.io "
                f'"{request.device_class_name}" '
                "not found"
            )
        data.device_class = device_class
        if request.allocation_mode == "ExactCount":
            data.num_devices = request.count
            return
        if request.allocation_mode != "All":
            raise self._fail(
                f"claim {claim.key}, request {request.name}: unsupported count mode "
                f"{request.allocation_mode}"
            )
        devices: list[Candidate] = []
        for pool in self.pools:
            if pool.incomplete:
                raise self._fail(
                    f"claim {claim.key}, request {request.name}: asks for all devices, "
                    "but resource "
                    f"pool {pool.id} is currently being updated"
                )
            if pool.invalid:
                raise self._fail(
                    f"claim {claim.key}, request {request.name}: asks for all devices, "
                    "but resource "
                    f"pool {pool.id} is currently invalid"
                )
            for resource_slice in pool.slices:
                for device in resource_slice.devices:
                    candidate = Candidate(pool, resource_slice, device)
                    if not self._is_selectable(
                        claim_index, request_index, sub_index, data, candidate
                    ):
                        continue
                    if (
                        self.features.consumable_capacity
                        and self._capacity(data, candidate) is None
                    ):
                        continue
                    devices.append(candidate)
        data.all_devices = devices
        data.num_devices = len(devices)

    def _prepare(self) -> None:
        features = self.features
        # Capacity requests while consumable capacity is off: refused by the newest variant,
        # ignored by the others.
        capacity_checked = features.newest_variant
        for claim_index, claim in enumerate(self.claims):
            minimum = 0
            for request_index, request in enumerate(claim.requests):
                if request.first_available and not features.prioritized_list:
                    raise self._fail(
                        f"claim {claim.key}, request {request.name}: has subrequests, but the "
                        "DRAPrioritizedList feature is disabled"
                    )
                if not features.consumable_capacity and capacity_checked:
                    if request.exactly is not None and request.exactly.has_capacity:
                        raise self._fail(
                            f"claim {claim.key}, request {request.name}: "
                            "has capacity requests, but "
                            "the DRAConsumableCapacity feature is disabled"
                        )
                    for subrequest in request.first_available:
                        if subrequest.has_capacity:
                            raise self._fail(
                                f"claim {claim.key}, subrequest {subrequest.name}: has capacity "
                                "requests, but the DRAConsumableCapacity feature is disabled"
                            )
                if request.first_available:
                    smallest: int | None = None
                    for sub_index, subrequest in enumerate(request.first_available):
                        data = _RequestData(subrequest, request)
                        self._validate(claim_index, request_index, sub_index, data)
                        self.request_data[(claim_index, request_index, sub_index)] = data
                        smallest = (
                            data.num_devices
                            if smallest is None
                            else min(smallest, data.num_devices)
                        )
                    minimum += smallest or 0
                else:
                    assert request.exactly is not None
                    data = _RequestData(request.exactly, None)
                    self._validate(claim_index, request_index, 0, data)
                    self.request_data[(claim_index, request_index, 0)] = data
                    minimum += data.num_devices
            if minimum > RESULTS_LIMIT:
                raise self._fail(
                    f"claim {claim.key}: number of requested devices {minimum} exceeds the claim "
                    f"limit of {RESULTS_LIMIT}"
                )
            constraints: list[ClaimConstraint] = []
            for number, constraint in enumerate(claim.constraints):
                if constraint.match_attribute:
                    constraints.append(MatchAttribute(constraint, constraint.match_attribute))
                elif constraint.distinct_attribute and features.distinct_attribute:
                    constraints.append(
                        DistinctAttribute(constraint, constraint.distinct_attribute, features)
                    )
                else:
                    raise self._fail(
                        f"claim {claim.key}, constraint #{number}: empty constraint (unsupported "
                        "constraint type?)"
                    )
            self.constraints.append(constraints)

    # --- device checks -------------------------------------------------------------------------

    def _selectors_match(
        self, claim_index: int, candidate: Candidate, selectors: tuple[str | None, ...], owner: str
    ) -> bool:
        for number, expression in enumerate(selectors):
            assert expression is not None
            selector = compile_selector(expression)
            try:
                if not selector.matches(self.case.input_for(candidate.slice, candidate.device)):
                    return False
            except CelCompileError as error:
                raise self._fail(
                    f"{owner}: selector #{number}: CEL compile error: {error}"
                ) from None
            except CelRuntimeError as error:
                raise self._fail(
                    f"{owner}: selector #{number} on device {candidate.label}: CEL runtime error: "
                    f"{error}"
                ) from None
        return True

    def _is_selectable(
        self,
        claim_index: int,
        request_index: int,
        sub_index: int,
        data: _RequestData,
        candidate: Candidate,
    ) -> bool:
        device = candidate.device
        if device.binding_conditions and not self.features.binding_and_status:
            return False
        key = (device.uid, claim_index, request_index, sub_index)
        cached = self.matches.get(key)
        if cached is not None:
            return cached
        if self.case.deadline is not None:
            self.case.deadline.check()
        result = True
        device_class = data.device_class
        if (
            device_class is not None
            and not self._selectors_match(
                claim_index, candidate, device_class.selectors, f"class {device_class.name}"
            )
            or not self._selectors_match(
                claim_index,
                candidate,
                data.request.selectors,
                f"claim {self.claims[claim_index].key}",
            )
            or candidate.slice.per_device_node_selection
            and not device_matches_node(device, self.node)
        ):
            result = False
        self.matches[key] = result
        return result

    def _capacity(self, data: _RequestData, candidate: Candidate) -> dict[str, Quantity] | None:
        key = candidate.key
        return request_capacity_fits(
            data.request,
            candidate,
            self.case.allocated.consumed.get(key, {}),
            self.allocating_capacity.get(key, {}),
        )

    def _capacity_in_use(self, key: DeviceKey) -> bool:
        return key in self.case.allocated.consumed or key in self.allocating_capacity

    def _in_use(self, key: DeviceKey) -> bool:
        return key in self.case.allocated.in_use or bool(self.allocating.get(key))

    def _counter_scope(
        self, candidate: Candidate
    ) -> tuple[Any, dict[str, dict[str, Fraction | int]]]:
        if self.features.is_1_34:
            scope: Any = ("slice", candidate.slice.name)
            sets = candidate.slice.shared_counters
            slices = [candidate.slice]
        else:
            scope = ("pool", candidate.pool.driver, candidate.pool.name)
            sets = tuple((candidate.pool.counter_sets or {}).values())
            slices = candidate.pool.slices + candidate.pool.other_slices
        available = self.available_counters.get(scope)
        if available is None:
            available = {
                set_name: {name: _exact(left) for name, left in counters.items()}
                for set_name, counters in available_counters(
                    sets, slices, self.case.allocated, self.features.shares_hold_counters
                ).items()
            }
            self.available_counters[scope] = available
        return scope, available

    def _reserve_counters(self, candidate: Candidate) -> bool:
        """Add the device's draw and check every counter of the scope, as upstream does (a
        scope already over budget admits nothing). The counters over budget are kept per
        scope and updated for the counters the device touches, so the check does not walk
        every counter of the scope each time."""
        scope, available = self._counter_scope(candidate)
        consumed = self.consumed_counters.setdefault(scope, {})
        over = self.over_budget.get(scope)
        if over is None:
            over = self.over_budget[scope] = set(counter_shortfall(available, consumed))
        self._draw(candidate, available, consumed, over, 1)
        if over:
            self._draw(candidate, available, consumed, over, -1)
            return False
        return True

    def _release_counters(self, candidate: Candidate) -> None:
        scope, available = self._counter_scope(candidate)
        over = self.over_budget[scope]
        self._draw(candidate, available, self.consumed_counters[scope], over, -1)

    def _draw(
        self,
        candidate: Candidate,
        available: dict[str, dict[str, Fraction | int]],
        consumed: dict[str, dict[str, Fraction | int]],
        over: set[tuple[str, str]],
        sign: int,
    ) -> None:
        device = candidate.device
        draws = self.draws.get(device.uid)
        if draws is None:
            # Whole amounts as ints: Fraction arithmetic is most of a counter-heavy search.
            draws = self.draws[device.uid] = [
                (consumption.counter_set, name, _exact(amount.value))
                for consumption in device.consumes_counters
                for name, amount in consumption.counters.items()
            ]
        for set_name, name, amount in draws:
            counters = consumed.setdefault(set_name, {})
            total = counters.get(name, 0) + amount if sign > 0 else counters[name] - amount
            counters[name] = total
            left = available.get(set_name, {}).get(name)
            if left is None:
                continue  # a counter no set defines does not limit
            if left < total:
                over.add((set_name, name))
            else:
                over.discard((set_name, name))

    def _taint_blocks(self, device: Device, request: ExactRequest) -> bool:
        return bool(untolerated_taints(device, request.tolerations, self.features))

    def _slot_device(
        self, claim_index: int, data: _RequestData, candidate: Candidate, slot: int
    ) -> Candidate:
        """The device whose capacity is checked while taking ``candidate`` for ``slot`` of a
        request: the candidate itself, except in 1.34, whose allocateDevice passes the slot
        number (the device's index within the request) where the device's index within its
        slice belongs. Past the slice's end upstream indexes out of range and panics."""
        if not self.features.is_1_34:
            return candidate
        devices = candidate.slice.devices
        if slot >= len(devices):
            raise self._fail(
                f"claim {self.claims[claim_index].key}, request {data.name}: Kubernetes 1.34 "
                f"checks the capacity of device #{slot} of slice {candidate.slice.name} for the "
                f"request's device #{slot} and panics: index out of range [{slot}] with length "
                f"{len(devices)}"
            )
        if devices[slot] is candidate.device:
            return candidate
        return Candidate(candidate.pool, candidate.slice, devices[slot])

    def _allocate_device(
        self, claim_index: int, data: _RequestData, candidate: Candidate, must: bool, slot: int
    ) -> Callable[[], None] | None:
        """Try to take the candidate; returns the undo function or None if it cannot be used."""
        features = self.features
        device = candidate.device
        key = candidate.key
        admin = data.admin_access
        multiple = features.consumable_capacity and bool(device.allow_multiple_allocations)
        if not multiple and admin and claim_index in self.allocating.get(key, ()):
            return None
        if not admin and self._in_use(key):
            return None
        if device.consumes_counters and not features.partitionable_devices:
            return None
        reserved = bool(device.consumes_counters) and not (
            multiple and features.shares_skip_counters and self._capacity_in_use(key)
        )
        if reserved and not self._reserve_counters(candidate):
            return None
        if features.device_taints and self._taint_blocks(device, data.request):
            if reserved and features.clean_rollback:
                self._release_counters(candidate)
            return None  # before 1.36 the counters stay reserved (upstream quirk)
        constraints = self.constraints[claim_index]
        driver = candidate.pool.driver
        for number, constraint in enumerate(constraints):
            if not constraint.add(data.base_name, data.sub_name, device, driver):
                for earlier in constraints[:number]:
                    earlier.remove(data.base_name, data.sub_name, device, driver)
                if reserved and features.clean_rollback:
                    self._release_counters(candidate)
                if must:
                    raise self._fail(
                        f"claim {self.claims[claim_index].key}, "
                        f"request {data.request.name}: cannot "
                        f"add device {candidate.label} because a claim constraint would not be "
                        "satisfied"
                    )
                return None
        if not multiple:
            self.allocating.setdefault(key, set()).add(claim_index)

        def release() -> None:
            """Undo the mark, the constraint values and the counters taken so far."""
            if not multiple:
                self.allocating[key].discard(claim_index)
            for constraint in constraints:
                constraint.remove(data.base_name, data.sub_name, device, driver)
            if reserved:
                self._release_counters(candidate)

        consumed: dict[str, Quantity] | None = None
        existed = False
        share_id = None
        if features.consumable_capacity:
            checked = self._slot_device(claim_index, data, candidate, slot)
            fitting = self._capacity(data, checked)
            if fitting is None:
                if features.clean_rollback:
                    release()
                return None  # before 1.36 the device stays marked (upstream quirk)
            if multiple:
                consumed = fitting if checked is candidate else _share_amounts(data, candidate)
                existed = key in self.allocating_capacity
                totals = self.allocating_capacity.setdefault(key, {})
                for name, amount in consumed.items():
                    totals[name] = totals.get(name, Fraction(0)) + amount.value
                self.shares += 1
                share_id = str(
                    uuid.uuid5(
                        _SHARE_NAMESPACE,
                        f"{self.claims[claim_index].key}/{data.name}/{candidate.label}/{self.shares}",
                    )
                )
        tolerations = data.request.tolerations_raw if not features.is_1_34 else ()
        results = self.results[claim_index]
        results.append(DeviceResult(data.name, candidate, admin, tolerations, share_id, consumed))

        def undo() -> None:
            results.pop()
            # Upstream drops a device's entry once its shares add up to zero and ignores a
            # removal that finds none: shares of zero leave nothing to subtract from. 1.36's
            # rollback puts back an (empty) entry that was there before this share.
            totals = self.allocating_capacity.get(key)
            if consumed is not None and totals is not None:
                for name, amount in consumed.items():
                    if name in totals:  # upstream's Sub skips a name the entry lacks
                        totals[name] -= amount.value
                if not any(totals.values()):
                    del self.allocating_capacity[key]
            if consumed is not None and existed and features.clean_rollback:
                self.allocating_capacity.setdefault(key, {})
            release()

        return undo

    # --- the search ----------------------------------------------------------------------------

    def _search(self, step: _Step) -> bool:
        """Run the depth-first search without recursing: each level is a generator that yields
        the step it wants the answer to (or raises into), on an explicit stack."""
        deadline = self.case.deadline
        stack = [self._allocate_one(*step)]
        answer: bool | None = None
        failure: BaseException | None = None
        while stack:
            if deadline is not None:
                deadline.check()
            level = stack[-1]
            try:
                if failure is not None:
                    raised, failure = failure, None
                    request = level.throw(raised)
                else:
                    request = level.send(answer)  # type: ignore[arg-type]
            except StopIteration as stop:
                stack.pop()
                answer = bool(stop.value)
                continue
            except (_ResultLimit, AllocationError) as error:
                stack.pop()
                if not stack:
                    raise
                failure = error
                continue
            stack.append(self._allocate_one(*request))
            answer = None
        return bool(answer)

    def _allocate_one(
        self,
        claim_index: int,
        request_index: int,
        sub_index: int,
        device_index: int,
        allocating_subrequest: bool,
        start: tuple[int, int, int],
    ) -> Generator[_Step, bool, bool]:
        if claim_index >= len(self.claims):
            return True
        claim = self.claims[claim_index]
        if request_index >= len(claim.requests):
            try:
                return (yield (claim_index + 1, 0, 0, 0, False, (0, 0, 0)))
            except _ResultLimit:
                return False
        data = self.request_data[(claim_index, request_index, sub_index)]
        if not allocating_subrequest and data.parent is not None:
            all_exceeded = True
            sub = 0
            while (claim_index, request_index, sub) in self.request_data:
                try:
                    done = yield (claim_index, request_index, sub, device_index, True, (0, 0, 0))
                except _ResultLimit:
                    sub += 1
                    continue
                all_exceeded = False
                if done:
                    self.request_data[(claim_index, request_index, 0)].selected_sub = sub
                    return True
                sub += 1
            if all_exceeded:
                raise _ResultLimit
            return False
        request = data.request
        all_mode = request.allocation_mode == "All"
        if all_mode and not data.all_devices:
            return False
        if device_index >= data.num_devices:
            return (yield (claim_index, request_index + 1, 0, 0, False, (0, 0, 0)))
        if len(self.results[claim_index]) + data.num_devices - device_index > RESULTS_LIMIT:
            raise _ResultLimit
        if all_mode:
            assert data.all_devices is not None
            undo = self._allocate_device(
                claim_index, data, data.all_devices[device_index], True, device_index
            )
            if undo is None:
                return False
            # 1.34 drops the alternative's index here (allocator_incubating.go:866, and the
            # experimental one's :983): the request's next device is then filled as one of
            # its *first* alternative, from this device index on.
            next_sub = 0 if self.features.is_1_34 else sub_index
            try:
                done = yield (
                    claim_index,
                    request_index,
                    next_sub,
                    device_index + 1,
                    allocating_subrequest,
                    (0, 0, 0),
                )
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done
        admin = data.admin_access
        start_pool, start_slice, start_device = start if self.combinations else (0, 0, 0)
        for pool_index in range(start_pool, len(self.pools)):
            pool = self.pools[pool_index]
            if pool.invalid and self.features.is_1_34:
                raise self._fail(f"pool {pool.name} is invalid: {pool.invalid_reason}")
            if (pool.incomplete or pool.invalid) and not self.features.is_1_34:
                continue
            first_slice = start_slice if pool_index == start_pool else 0
            for slice_index in range(first_slice, len(pool.slices)):
                resource_slice = pool.slices[slice_index]
                first_device = (
                    start_device if (pool_index, slice_index) == (start_pool, start_slice) else 0
                )
                devices = resource_slice.devices
                for position in range(first_device, len(devices)):
                    device = devices[position]
                    key = (pool.driver, pool.name, device.name)
                    if admin:
                        if claim_index in self.allocating.get(key, ()):
                            continue
                    elif self._in_use(key):
                        continue
                    candidate = Candidate(pool, resource_slice, device)
                    if not self._is_selectable(
                        claim_index, request_index, sub_index, data, candidate
                    ):
                        continue
                    if (
                        self.features.consumable_capacity
                        and self._capacity(data, candidate) is None
                    ):
                        continue
                    undo = self._allocate_device(claim_index, data, candidate, False, device_index)
                    if undo is None:
                        continue
                    try:
                        done = yield (
                            claim_index,
                            request_index,
                            sub_index,
                            device_index + 1,
                            allocating_subrequest,
                            (pool_index, slice_index, position + 1),
                        )
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    def allocate(self) -> list[ClaimAllocation] | None:
        """Allocate every claim on this node: results, None (unsatisfiable) or AllocationError."""
        self._prepare()
        try:
            done = self._search((0, 0, 0, 0, False, (0, 0, 0)))
        except _ResultLimit:
            done = False
        if not done:
            if not self.features.is_1_34 and any(pool.invalid for pool in self.pools):
                raise self._fail("invalid resource pools were encountered")
            return None
        allocations = []
        for claim_index, claim in enumerate(self.claims):
            chosen = []
            for request_index in range(len(claim.requests)):
                data = self.request_data[(claim_index, request_index, 0)]
                if data.parent is not None:
                    data = self.request_data[(claim_index, request_index, data.selected_sub)]
                chosen.append(data)
            allocations.append(ClaimAllocation(claim, list(self.results[claim_index]), chosen))
        return allocations
