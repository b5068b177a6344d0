"""Cluster-wide search: which node can satisfy the claims, without trying all of them.

Nodes are tried in **node-name order** and the first node whose allocation succeeds wins. That
is the harness semantics of dra-semantics §3 (the scheduler filters every node; our contract
needs one deterministic answer, and name order is the one a reader can predict). If no node
succeeds, the outcome is the error of the first node (in that order) that failed with an error,
otherwise "unsatisfiable".

To avoid a full allocation attempt on each of thousands of nodes, :class:`Cluster` keeps
indexes that survive across calls: devices grouped by the values each selector reads (so a
selector runs once per distinct device shape; the values are read straight from the parsed
devices, see :mod:`dra.allocator.grouping`), the set of devices matching each request's
class + request selectors, and devices per node. A node is skipped only when that is provably
the same as trying it: some request needs more devices than the node has free matching ones,
and nothing the node can see could raise an error (no selector error on a visible device, no
invalid pool). Claims with ``All`` requests are always tried node by node.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from dra.allocator.availability import Availability, State, usage_availability
from dra.allocator.grouping import grouped_input, grouping_key_reader
from dra.allocator.pools import Inventory, device_matches_node
from dra.allocator.search import (
    DEFAULT_TIMEOUT_SECONDS,
    AllocatedState,
    AllocationError,
    AllocationTimeout,
    CaseData,
    ClaimAllocation,
    Deadline,
    NodeAllocation,
)
from dra.cel import CelCompileError, CelRuntimeError, DeviceInput, compile_selector
from dra.features import Features
from dra.memory import without_cyclic_gc
from dra.model import DeviceClass, ExactRequest, Node, ResourceClaim, ResourceSlice

__all__ = ["Cluster", "NodeOutcome"]


@dataclass(slots=True)
class NodeOutcome:
    """What happened: allocations on ``node``, or unsatisfiable (both None), or ``error``."""

    node: Node | None
    allocations: list[ClaimAllocation] | None
    error: str | None = None


@dataclass(slots=True)
class _Matches:
    """Devices (by uid) passing every selector of a (sub)request, and those raising errors."""

    passing: set[int]
    errors: set[int]
    compile_error: bool
    free: set[int] | None = None  # passing minus devices in use; kept current by commit()


@dataclass(slots=True)
class _Need:
    """One way to satisfy a request: ``count`` devices out of ``matches``."""

    count: int
    matches: _Matches
    admin: bool
    attributes: tuple[str, ...]  # matchAttribute constraints covering the request


@dataclass(slots=True)
class Cluster:
    """A long-lived view of the inventory for repeated allocations (benchmarks, the portal).

    It caches what it derives from its fields (the shared case, matches, what each node sees):
    change classes, nodes and usage through ``replace_classes``, ``replace_nodes`` and
    ``replace_usage``, never by assigning the fields; a new inventory is a new ``Cluster``."""

    features: Features
    classes: dict[str, DeviceClass]
    inventory: Inventory
    nodes: list[Node]
    allocated: AllocatedState = field(default_factory=AllocatedState)
    _groups: dict[frozenset[tuple[str, ...]], dict[tuple[object, ...], list[int]]] = field(
        default_factory=dict
    )
    # groupings whose keys were read straight from the devices (see ``_group_input``)
    _keyed_groupings: set[frozenset[tuple[str, ...]]] = field(default_factory=set)
    _matches: dict[tuple[tuple[str | None, ...], tuple[str | None, ...]], _Matches] = field(
        default_factory=dict
    )
    _case: CaseData | None = None
    _suspicious_pools: set[tuple[str, str]] = field(default_factory=set)
    _visible: dict[str, frozenset[int]] = field(default_factory=dict)
    _suspicious_nodes: dict[str, bool] = field(default_factory=dict)
    _uids_by_key: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    _busy: set[int] = field(default_factory=set)
    # ``allocated.in_use`` by pool: a usage change of one pool touches its keys only (a scan of
    # every key in use took 7 ms a call at 10,000 allocated devices).
    _in_use_by_pool: dict[tuple[str, str], set[tuple[str, str, str]]] = field(default_factory=dict)
    # Availability of each device by uid, per pool, and the devices of those pools that are
    # not free; a pool whose usage changed is recomputed on the next read (``_stale``).
    _availability: dict[tuple[str, str], dict[int, Availability]] = field(default_factory=dict)
    _not_free: set[int] = field(default_factory=set)
    _stale: set[tuple[str, str]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.replace_nodes(self.nodes)
        self._suspicious_pools = self._pools_that_may_be_invalid()
        for resource_slice, device in self.inventory.devices:
            key = (resource_slice.driver, resource_slice.pool_name, device.name)
            self._uids_by_key.setdefault(key, []).append(device.uid)
        for key in self.allocated.in_use:
            self._busy.update(self._uids_by_key.get(key, ()))
            self._in_use_by_pool.setdefault((key[0], key[1]), set()).add(key)
        self._stale = set(self.inventory.by_pool)

    def case(self, claims: list[ResourceClaim] | None = None) -> CaseData:
        """The shared case data (device inputs stay cached); ``claims`` replaces the claims."""
        if self._case is None:
            self._case = CaseData(self.features, self.classes, self.inventory, self.allocated, [])
        if claims is not None:
            self._case.claims = claims
        return self._case

    def commit(self, allocations: Iterable[ClaimAllocation]) -> None:
        """Record allocations as in use, so later calls see them (like a written claim status)."""
        for allocation in allocations:
            for result in allocation.results:
                if result.admin_access:
                    continue
                self._stale.add(result.candidate.key[:2])
                if result.share_id is not None:
                    totals = self.allocated.consumed.setdefault(result.candidate.key, {})
                    for name, amount in (result.consumed_capacity or {}).items():
                        totals[name] = totals.get(name, 0) + amount.value
                else:
                    key = result.candidate.key
                    self.allocated.in_use.add(key)
                    self._in_use_by_pool.setdefault((key[0], key[1]), set()).add(key)
                    taken = self._uids_by_key.get(result.candidate.key, ())
                    self._busy.update(taken)
                    for matches in self._matches.values():
                        if matches.free is not None:
                            matches.free.difference_update(taken)

    def replace_classes(self, classes: dict[str, DeviceClass]) -> None:
        """Allocate with ``classes`` from now on (device classes created, changed or deleted).

        The shared case is made again over them: it held the old classes, and allocations
        read a request's class from it. The devices' CEL inputs (inventory only) and the
        selector matches (kept by the selectors themselves) stay.
        """
        self.classes = classes
        if self._case is not None:
            inputs = self._case.inputs
            self._case = None
            self.case().inputs = inputs

    def replace_nodes(self, nodes: Iterable[Node]) -> None:
        """Search ``nodes`` from now on (nodes added, relabelled or removed); what each node
        may see is found again."""
        self.nodes = sorted(nodes, key=lambda node: node.name)
        self._visible.clear()
        self._suspicious_nodes.clear()

    def replace_usage(self, pools: Iterable[tuple[str, str]], state: AllocatedState) -> None:
        """Make what is in use in ``pools`` what ``state`` says of them, leaving other pools be.

        The incremental update of a long-lived index: a claim allocated, released or deleted
        changes the usage of the pools its results name, and only those are recomputed.
        """
        pools = set(pools)
        if not pools:
            return
        self._stale |= pools & self.inventory.by_pool.keys()
        in_use = self.allocated.in_use
        by_pool = self._in_use_by_pool
        for pool in pools:
            in_use.difference_update(by_pool.pop(pool, ()))
        for key in state.in_use:
            if (key[0], key[1]) in pools:
                in_use.add(key)
                by_pool.setdefault((key[0], key[1]), set()).add(key)
        consumed = self.allocated.consumed
        for key in [key for key in consumed if (key[0], key[1]) in pools]:
            del consumed[key]
        consumed.update(
            (key, dict(amounts))
            for key, amounts in state.consumed.items()
            if (key[0], key[1]) in pools
        )
        affected: set[int] = set()
        for pool in pools:
            for resource_slice in self.inventory.by_pool.get(pool, ()):
                affected.update(device.uid for device in resource_slice.devices)
        self._busy.difference_update(affected)
        for pool in pools:
            for key in by_pool.get(pool, ()):
                self._busy.update(self._uids_by_key.get(key, ()))
        for matches in self._matches.values():
            if matches.free is not None:
                matches.free.difference_update(affected)
                matches.free.update((matches.passing & affected) - self._busy)

    def free_matching(self, device_class: DeviceClass | None, request: ExactRequest) -> set[int]:
        """Devices (by uid) passing the class's and the request's selectors and not in use."""
        matches = self._request_matches(device_class, request)
        if matches.free is None:
            matches.free = matches.passing - self._busy
        return matches.free

    def availability(self, uids: Iterable[int]) -> dict[int, Availability]:
        """What a request for exactly each device (by uid) meets now: the state and reason of
        :mod:`dra.allocator.availability` under this cluster's usage, the answer the portal's
        pages show. ``free_matching`` is coarser (not in use: blocked and tainted devices
        pass it, as a request may tolerate the taint)."""
        self._refresh_availability()
        devices = self.inventory.devices
        return {
            uid: self._availability[(devices[uid][0].driver, devices[uid][0].pool_name)][uid]
            for uid in uids
        }

    def not_free(self) -> set[int]:
        """The devices (uids) whose availability is anything but free: ``passing -
        not_free()`` are the free ones, as every page counts them. Every pool is computed on
        the first call (about half a second for 40,000 devices), then only the pools whose
        usage changed (a few milliseconds).
        The set is the cluster's own: do not change it."""
        self._refresh_availability()
        return self._not_free

    def _refresh_availability(self) -> None:
        for pool in self._stale:
            slices = self.inventory.by_pool.get(pool, [])
            answers = usage_availability(slices, self.allocated, self.features)
            states = {
                device.uid: answers[(resource_slice.name, device.name)]
                for resource_slice in slices
                for device in resource_slice.devices
            }
            self._availability[pool] = states
            for uid, found in states.items():
                if found.state is State.FREE:
                    self._not_free.discard(uid)
                else:
                    self._not_free.add(uid)
        self._stale.clear()

    def request_matches(
        self, device_class: DeviceClass | None, request: ExactRequest
    ) -> tuple[set[int], set[int]]:
        """(devices passing the class's and the request's selectors, devices raising errors),
        by uid; one CEL evaluation per distinct device shape, cached across calls."""
        matches = self._request_matches(device_class, request)
        return matches.passing, matches.errors

    # --- indexes -------------------------------------------------------------------------------

    def _pools_that_may_be_invalid(self) -> set[tuple[str, str]]:
        suspicious = set()
        for pool_key, slices in self.inventory.by_pool.items():
            by_generation: dict[int, list[ResourceSlice]] = {}
            for resource_slice in slices:
                by_generation.setdefault(resource_slice.generation, []).append(resource_slice)
            for generation_slices in by_generation.values():
                names = [device.name for item in generation_slices for device in item.devices]
                counters = any(item.shared_counters for item in generation_slices) or any(
                    device.consumes_counters
                    for item in generation_slices
                    for device in item.devices
                )
                if len(names) != len(set(names)) or counters:
                    suspicious.add(pool_key)
        return suspicious

    def _grouping(self, paths: frozenset[tuple[str, ...]]) -> dict[tuple[object, ...], list[int]]:
        groups = self._groups.get(paths)
        if groups is None:
            selector_paths = sorted(paths)
            case = self.case()
            groups = {}
            from dra.cel.devices import path_getter  # the projection the result cache uses

            read_key = grouping_key_reader(selector_paths, self.features.newest_variant)
            getters = [path_getter(path) for path in selector_paths]
            for resource_slice, device in self.inventory.devices:
                if read_key is not None:
                    found = read_key(resource_slice, device)
                else:
                    device_view = case.input_for(resource_slice, device)
                    found = None
                    if device_view.conversion_error is None:
                        found = tuple(getter(device_view) for getter in getters)
                key: tuple[object, ...] = ("error", device.uid) if found is None else found
                groups.setdefault(key, []).append(device.uid)
            self._groups[paths] = groups
            if read_key is not None:
                self._keyed_groupings.add(paths)
        return groups

    def _group_input(
        self,
        case: CaseData,
        paths: frozenset[tuple[str, ...]],
        key: tuple[object, ...],
        uid: int,
    ) -> DeviceInput:
        """The view a group's selector runs on: only the values the key read where the key was
        read straight from the device, else the device's whole (cached) view."""
        resource_slice, device = self.inventory.devices[uid]
        if paths in self._keyed_groupings and key[:1] != ("error",):
            return grouped_input(
                sorted(paths),
                key,
                resource_slice,
                device,
                self.features.newest_variant,
                self.features.strict_url_host_colons,
            )
        return case.input_for(resource_slice, device)

    def _selector_matches(
        self, selectors: tuple[str | None, ...], candidates: set[int] | None
    ) -> _Matches:
        """Devices passing every selector (and those a selector errs on). Grouping 50,000
        devices and running a selector per group build a list or view per group: the cyclic
        collector would walk the whole index meanwhile (the grouping of a selector reading a
        ``uuid`` took 270 ms with it, 25 ms without)."""
        with without_cyclic_gc():
            return self._selector_matches_now(selectors, candidates)

    def _selector_matches_now(
        self, selectors: tuple[str | None, ...], candidates: set[int] | None
    ) -> _Matches:
        passing = set(range(len(self.inventory.devices))) if candidates is None else set(candidates)
        errors: set[int] = set()
        compile_error = False
        case = self.case()
        for expression in selectors:
            if expression is None:
                continue
            selector = compile_selector(expression)
            if selector.error is not None or selector.reads is None:
                errors |= passing
                return _Matches(set(), errors, True)
            kept: set[int] = set()
            paths = selector.reads.paths if selector.reads.parsed else frozenset({("all",)})
            for key, uids in self._grouping(paths).items():
                if case.deadline is not None:
                    case.deadline.check()
                inside = [uid for uid in uids if uid in passing]
                if not inside:
                    continue
                try:
                    matched = selector.matches(self._group_input(case, paths, key, inside[0]))
                except (CelRuntimeError, CelCompileError):
                    errors.update(inside)
                    continue
                if matched:
                    kept.update(inside)
            passing = kept
        return _Matches(passing, errors, compile_error)

    def _request_matches(self, device_class: DeviceClass | None, request: ExactRequest) -> _Matches:
        class_selectors = device_class.selectors if device_class is not None else ()
        key = (class_selectors, request.selectors)
        found = self._matches.get(key)
        if found is None:
            by_class = self._selector_matches(class_selectors, None)
            by_request = self._selector_matches(request.selectors, by_class.passing)
            found = _Matches(
                by_request.passing,
                by_class.errors | by_request.errors,
                by_class.compile_error or by_request.compile_error,
            )
            self._matches[key] = found
        return found

    # --- search --------------------------------------------------------------------------------

    def _visible_uids(self, node: Node) -> frozenset[int]:
        """Devices of slices the node may see (over-approximation: every generation)."""
        cached = self._visible.get(node.name)
        if cached is not None:
            return cached
        uids: list[int] = []
        for resource_slice in self.inventory.by_node.get(node.name, []):
            uids.extend(device.uid for device in resource_slice.devices)
        for resource_slice in self.inventory.shared:
            if resource_slice.per_device_node_selection:
                uids.extend(
                    device.uid
                    for device in resource_slice.devices
                    if device_matches_node(device, node)
                )
            elif (
                resource_slice.all_nodes
                or resource_slice.node_name == node.name
                or (
                    resource_slice.node_selector is not None
                    and resource_slice.node_selector.matches(node)
                )
            ):
                uids.extend(device.uid for device in resource_slice.devices)
        cached = frozenset(uids)
        self._visible[node.name] = cached
        return cached

    def _may_see_suspicious_pool(self, node: Node) -> bool:
        if not self._suspicious_pools:
            return False
        cached = self._suspicious_nodes.get(node.name)
        if cached is None:
            cached = any(
                (resource_slice.driver, resource_slice.pool_name) in self._suspicious_pools
                for resource_slice in self.inventory.slices_for_node(node.name)
            )
            self._suspicious_nodes[node.name] = cached
        return cached

    def _needs(self, claims: list[ResourceClaim]) -> list[list[_Need]] | None:
        """Per request, what each alternative needs; None: no pre-filtering possible."""
        needs = []
        for claim in claims:
            for request in claim.requests:
                alternatives = (
                    [request.exactly]
                    if request.exactly is not None
                    else list(request.first_available)
                )
                options = []
                for alternative in alternatives:
                    if alternative is None or alternative.allocation_mode != "ExactCount":
                        return None
                    device_class = self.classes.get(alternative.device_class_name)
                    matches = self._request_matches(device_class, alternative)
                    sub = alternative.name if request.exactly is None else None
                    attributes = tuple(
                        constraint.match_attribute
                        for constraint in claim.constraints
                        if constraint.match_attribute and constraint.applies_to(request.name, sub)
                    )
                    options.append(
                        _Need(
                            alternative.count, matches, bool(alternative.admin_access), attributes
                        )
                    )
                needs.append(options)
        return needs

    def _cannot_fit(self, node: Node, needs: list[list[_Need]]) -> bool:
        """True when some request certainly fails on the node and nothing there can error.

        A request covered by ``matchAttribute`` constraints needs ``count`` usable devices that
        agree on all those attributes (a necessary condition; the search decides the rest).
        """
        visible = self._visible_uids(node)
        for options in needs:
            for need in options:
                if need.matches.errors and not need.matches.errors.isdisjoint(visible):
                    return False
        devices = self.inventory.devices
        # Before 1.36 one shared device can serve several devices of a request (dra-semantics
        # §15.6), so counting distinct devices proves nothing where such a device is usable.
        repeats = self.features.consumable_capacity and self.features.version < (1, 36)
        for options in needs:
            fits = False
            for need in options:
                matches = need.matches
                if need.admin:
                    usable = visible & matches.passing
                else:
                    if matches.free is None:
                        matches.free = matches.passing - self._busy
                    usable = visible & matches.free
                if repeats and any(devices[uid][1].allow_multiple_allocations for uid in usable):
                    fits = True
                    break
                if need.attributes and len(usable) >= need.count:
                    groups: dict[tuple[object, ...], int] = {}
                    for uid in sorted(usable):
                        resource_slice, device = devices[uid]
                        values = tuple(
                            device.attribute(name, resource_slice.driver)
                            for name in need.attributes
                        )
                        if None not in values:
                            groups[values] = groups.get(values, 0) + 1
                    largest = max(groups.values(), default=0)
                else:
                    largest = len(usable)
                if largest >= need.count:
                    fits = True
                    break
            if not fits:
                return True
        return False

    def matching_devices(self, expression: str) -> tuple[list[str], list[str]]:
        """Selector preview on the long-lived index: (matching device ids, runtime errors).

        Raises :class:`CelCompileError` when the selector does not compile.
        """
        selector = compile_selector(expression)
        if selector.error is not None:
            raise selector.error
        matches = self._selector_matches((expression,), None)
        labels = []
        for uid in sorted(matches.passing):
            resource_slice, device = self.inventory.devices[uid]
            labels.append(f"{resource_slice.driver}/{resource_slice.pool_name}/{device.name}")
        errors = []
        for uid in sorted(matches.errors):
            resource_slice, device = self.inventory.devices[uid]
            errors.append(f"{resource_slice.driver}/{resource_slice.pool_name}/{device.name}")
        return labels, errors

    def allocate(
        self,
        claims: list[ResourceClaim],
        node_name: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT_SECONDS,
    ) -> NodeOutcome:
        """Allocate the claims together on ``node_name``, or on the first node that works.

        ``timeout`` bounds the whole call in wall-clock seconds (None: no limit); past it the
        outcome is an error naming the limit, whatever nodes were left to try.
        """
        case = self.case(claims)
        case.deadline = Deadline.start(timeout) if timeout is not None else None
        try:
            return self._allocate(case, claims, node_name)
        except AllocationTimeout as error:
            return NodeOutcome(None, None, str(error))
        finally:
            case.deadline = None

    def _allocate(
        self, case: CaseData, claims: list[ResourceClaim], node_name: str | None
    ) -> NodeOutcome:
        if node_name is not None:
            node = next((item for item in self.nodes if item.name == node_name), None)
            if node is None:
                return NodeOutcome(None, None, f"node {node_name} not found")
            return self._try(case, node)
        needs = None
        if self.nodes:
            try:
                NodeAllocation(case, self.nodes[0], pools=[])._prepare()
            except AllocationError as error:
                return NodeOutcome(None, None, str(error))
            needs = self._needs(claims)
        first_error: str | None = None
        for node in self.nodes:
            if case.deadline is not None:
                case.deadline.check()
            if (
                needs is not None
                and not self._may_see_suspicious_pool(node)
                and self._cannot_fit(node, needs)
            ):
                continue
            outcome = self._try(case, node)
            if outcome.allocations is not None:
                return outcome
            if outcome.error is not None and first_error is None:
                first_error = outcome.error
                if needs is not None and any(
                    all(need.matches.compile_error and need.count > 0 for need in options)
                    for options in needs
                ):
                    break  # a selector every candidate must run does not compile: no node can work
        return NodeOutcome(None, None, first_error)

    def _try(self, case: CaseData, node: Node) -> NodeOutcome:
        try:
            allocations = NodeAllocation(case, node).allocate()
        except AllocationTimeout:
            raise
        except AllocationError as error:
            return NodeOutcome(node, None, str(error))
        return NodeOutcome(node, allocations)
