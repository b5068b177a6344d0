"""Typed, immutable views over resource.k8s.io/v1 JSON (and the core Node), parsed once.

Every parser takes the raw object as the API serves it and raises :class:`InvalidObject` with a
message naming the object and the field (``resourceSlices[2] (node-1-gpu): spec.pool.name:
required``). Fields the allocator does not read are ignored; ``raw`` keeps the original where
results need to copy parts of it (opaque configs, node selectors).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dra.quantity import Quantity, QuantityError, parse_quantity

__all__ = [
    "InvalidObject",
    "AttributeValue",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "NodeSelector",
    "Node",
    "Taint",
    "Toleration",
    "CapacityPolicy",
    "DeviceCapacity",
    "CounterConsumption",
    "CounterSet",
    "Device",
    "ResourceSlice",
    "DeviceClass",
    "ExactRequest",
    "DeviceRequest",
    "Constraint",
    "ClaimConfig",
    "ResourceClaim",
    "AllocatedDevice",
    "parse_counter_set",
    "parse_device",
    "parse_node",
    "parse_slice",
    "parse_device_class",
    "parse_claim",
    "parse_allocated_results",
    "qualify",
    "selector_expressions",
]


class InvalidObject(ValueError):
    """An input object that is not valid resource.k8s.io/v1 JSON of the expected shape."""


# (kind, value): kind is "int", "bool", "string", "version" or "list" (1.36 list attributes,
# which this allocator does not model). Hashable, so it can key caches.
AttributeValue = tuple[str, Any]


def qualify(name: str, driver: str) -> tuple[str, str]:
    """Split a QualifiedName into (domain, id); an unqualified name belongs to the driver."""
    domain, slash, identifier = name.partition("/")
    if not slash:
        return driver, name
    return domain, identifier


class _Reader:
    """Field access with errors that name the object and the path."""

    def __init__(self, label: str) -> None:
        self.label = label

    def fail(self, path: str, problem: str) -> InvalidObject:
        return InvalidObject(f"{self.label}: {path}: {problem}")

    def obj(self, value: Any, path: str, required: bool = False) -> Mapping[str, Any]:
        if value is None:
            if required:
                raise self.fail(path, "required")
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(path, "must be an object")
        return value

    def lst(self, value: Any, path: str) -> Sequence[Any]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.fail(path, "must be a list")
        return value

    def string(self, value: Any, path: str, required: bool = False) -> str | None:
        if value is None or (required and value == ""):
            if required:
                raise self.fail(path, "required")
            return None
        if not isinstance(value, str):
            raise self.fail(path, "must be a string")
        return value

    def integer(self, value: Any, path: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, "must be an integer")
        return value

    def boolean(self, value: Any, path: str) -> bool | None:
        if value is None:
            return None
        if not isinstance(value, bool):
            raise self.fail(path, "must be true or false")
        return value

    def quantity(self, value: Any, path: str) -> Quantity:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.fail(path, "must be a quantity string")
        try:
            return parse_quantity(str(value).strip())
        except QuantityError as error:
            raise self.fail(path, str(error)) from None

    def strings(self, value: Any, path: str) -> tuple[str, ...]:
        items = self.lst(value, path)
        result = []
        for index, item in enumerate(items):
            text = self.string(item, f"{path}[{index}]")
            result.append(text or "")
        return tuple(result)


# --- nodes and node selectors ------------------------------------------------------------------

_SELECTOR_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})


@dataclass(frozen=True, slots=True)
class NodeSelectorRequirement:
    key: str
    operator: str
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Node-affinity semantics of one requirement against a label (or field) map."""
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if not present:
            return False
        try:
            actual = int(labels[self.key])
        except ValueError:
            return False
        wanted = int(self.values[0])
        return actual > wanted if self.operator == "Gt" else actual < wanted

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"key": self.key, "operator": self.operator}
        if self.values:
            result["values"] = list(self.values)
        return result


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()

    def matches(self, node: Node) -> bool:
        """All requirements ANDed; an empty term matches no node."""
        if not self.match_expressions and not self.match_fields:
            return False
        if not all(requirement.matches(node.labels) for requirement in self.match_expressions):
            return False
        fields = {"metadata.name": node.name}
        return all(requirement.matches(fields) for requirement in self.match_fields)


@dataclass(frozen=True, slots=True)
class NodeSelector:
    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, node: Node) -> bool:
        """Terms are ORed."""
        return any(term.matches(node) for term in self.terms)


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    labels: Mapping[str, str]


def _requirement(reader: _Reader, raw: Any, path: str, is_field: bool) -> NodeSelectorRequirement:
    item = reader.obj(raw, path)
    key = reader.string(item.get("key"), f"{path}.key", required=True) or ""
    operator = reader.string(item.get("operator"), f"{path}.operator", required=True) or ""
    values = reader.strings(item.get("values"), f"{path}.values")
    if operator not in _SELECTOR_OPERATORS or (is_field and operator not in ("In", "NotIn")):
        raise reader.fail(f"{path}.operator", f"{operator!r} is not a valid operator")
    if is_field and key != "metadata.name":
        raise reader.fail(f"{path}.key", f"{key!r} is not a supported field selector")
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            raise reader.fail(f"{path}.values", "must have exactly one value for Gt/Lt")
        try:
            int(values[0])
        except ValueError:
            raise reader.fail(f"{path}.values", "must be an integer for Gt/Lt") from None
    return NodeSelectorRequirement(key, operator, values)


def _node_selector(reader: _Reader, raw: Any, path: str) -> NodeSelector | None:
    if raw is None:
        return None
    selector = reader.obj(raw, path)
    terms = []
    for index, raw_term in enumerate(
        reader.lst(selector.get("nodeSelectorTerms"), f"{path}.nodeSelectorTerms")
    ):
        term_path = f"{path}.nodeSelectorTerms[{index}]"
        term = reader.obj(raw_term, term_path)
        expressions = tuple(
            _requirement(reader, item, f"{term_path}.matchExpressions[{number}]", False)
            for number, item in enumerate(
                reader.lst(term.get("matchExpressions"), f"{term_path}.matchExpressions")
            )
        )
        fields = tuple(
            _requirement(reader, item, f"{term_path}.matchFields[{number}]", True)
            for number, item in enumerate(
                reader.lst(term.get("matchFields"), f"{term_path}.matchFields")
            )
        )
        terms.append(NodeSelectorTerm(expressions, fields))
    return NodeSelector(tuple(terms))


def parse_node(raw: Any, label: str) -> Node:
    reader = _Reader(label)
    node = reader.obj(raw, "node", required=True)
    metadata = reader.obj(node.get("metadata"), "metadata", required=True)
    name = reader.string(metadata.get("name"), "metadata.name", required=True) or ""
    labels_raw = reader.obj(metadata.get("labels"), "metadata.labels")
    labels = {}
    for key, value in labels_raw.items():
        labels[str(key)] = reader.string(value, f"metadata.labels[{key}]") or ""
    return Node(name, labels)


# --- devices and slices ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' device toleration matching (empty key/effect match any)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        return False


@dataclass(frozen=True, slots=True)
class CapacityPolicy:
    default: Quantity | None
    valid_values: tuple[Quantity, ...] | None
    min: Quantity | None
    max: Quantity | None
    step: Quantity | None
    has_range: bool


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    value: Quantity
    policy: CapacityPolicy | None


@dataclass(frozen=True, slots=True)
class CounterConsumption:
    counter_set: str
    counters: Mapping[str, Quantity]


@dataclass(frozen=True, slots=True)
class CounterSet:
    name: str
    counters: Mapping[str, Quantity]


@dataclass(eq=False, slots=True)
class Device:
    """One device of a slice. Identity is (driver, pool, name); ``uid`` numbers it in a case."""

    name: str
    attributes: Mapping[str, AttributeValue]
    capacity: Mapping[str, DeviceCapacity]
    consumes_counters: tuple[CounterConsumption, ...] = ()
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    node_selector_raw: Any = None
    all_nodes: bool | None = None
    taints: tuple[Taint, ...] = ()
    binds_to_node: bool = False
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    allow_multiple_allocations: bool | None = None
    uid: int = -1

    def attribute(self, name: str, driver: str) -> AttributeValue | None:
        """An attribute by identifier: the exact key first; then, for the device's own driver's
        domain, the unqualified key (how DRA resolves ``driver/name`` and ``name``)."""
        value = self.attributes.get(name)
        if value is not None:
            return value
        domain, slash, identifier = name.partition("/")
        if not slash or domain != driver:
            return None
        return self.attributes.get(identifier)


@dataclass(eq=False, slots=True)
class ResourceSlice:
    name: str
    driver: str
    pool_name: str
    generation: int
    resource_slice_count: int
    node_name: str | None
    node_selector: NodeSelector | None
    node_selector_raw: Any
    all_nodes: bool | None
    per_device_node_selection: bool | None
    devices: tuple[Device, ...]
    shared_counters: tuple[CounterSet, ...]
    index: int = 0


def _attribute(reader: _Reader, raw: Any, path: str) -> AttributeValue:
    value = reader.obj(raw, path)
    for kind, json_key in (("int", "int"), ("bool", "bool"), ("string", "string")):
        if json_key in value and value[json_key] is not None:
            item = value[json_key]
            if kind == "int":
                return ("int", reader.integer(item, f"{path}.int"))
            if kind == "bool":
                return ("bool", reader.boolean(item, f"{path}.bool"))
            return ("string", reader.string(item, f"{path}.string"))
    if value.get("version") is not None:
        return ("version", reader.string(value["version"], f"{path}.version"))
    for json_key in ("ints", "bools", "strings", "versions"):
        if value.get(json_key) is not None:
            return ("list", (json_key, tuple(reader.lst(value[json_key], f"{path}.{json_key}"))))
    return ("unknown", None)


def _counters(reader: _Reader, raw: Any, path: str) -> dict[str, Quantity]:
    counters = {}
    for name, counter in reader.obj(raw, path).items():
        counter_obj = reader.obj(counter, f"{path}[{name}]")
        counters[str(name)] = reader.quantity(counter_obj.get("value"), f"{path}[{name}].value")
    return counters


def _policy(reader: _Reader, raw: Any, path: str) -> CapacityPolicy | None:
    if raw is None:
        return None
    policy = reader.obj(raw, path)
    default = policy.get("default")
    valid_values = policy.get("validValues")
    valid_range = policy.get("validRange")
    range_obj = reader.obj(valid_range, f"{path}.validRange")

    def optional_quantity(value: Any, sub_path: str) -> Quantity | None:
        return None if value is None else reader.quantity(value, sub_path)

    return CapacityPolicy(
        default=optional_quantity(default, f"{path}.default"),
        valid_values=None
        if valid_values is None
        else tuple(
            reader.quantity(item, f"{path}.validValues[{index}]")
            for index, item in enumerate(reader.lst(valid_values, f"{path}.validValues"))
        ),
        min=optional_quantity(range_obj.get("min"), f"{path}.validRange.min"),
        max=optional_quantity(range_obj.get("max"), f"{path}.validRange.max"),
        step=optional_quantity(range_obj.get("step"), f"{path}.validRange.step"),
        has_range=valid_range is not None,
    )


def _device(reader: _Reader, raw: Any, path: str) -> Device:
    item = reader.obj(raw, path)
    name = reader.string(item.get("name"), f"{path}.name", required=True) or ""
    attributes = {
        str(key): _attribute(reader, value, f"{path}.attributes[{key}]")
        for key, value in reader.obj(item.get("attributes"), f"{path}.attributes").items()
    }
    capacity = {}
    for key, value in reader.obj(item.get("capacity"), f"{path}.capacity").items():
        capacity_obj = reader.obj(value, f"{path}.capacity[{key}]")
        capacity[str(key)] = DeviceCapacity(
            reader.quantity(capacity_obj.get("value"), f"{path}.capacity[{key}].value"),
            _policy(
                reader, capacity_obj.get("requestPolicy"), f"{path}.capacity[{key}].requestPolicy"
            ),
        )
    consumes = []
    for index, consumption in enumerate(
        reader.lst(item.get("consumesCounters"), f"{path}.consumesCounters")
    ):
        consumption_path = f"{path}.consumesCounters[{index}]"
        consumption_obj = reader.obj(consumption, consumption_path)
        consumes.append(
            CounterConsumption(
                reader.string(
                    consumption_obj.get("counterSet"), f"{consumption_path}.counterSet", True
                )
                or "",
                _counters(reader, consumption_obj.get("counters"), f"{consumption_path}.counters"),
            )
        )
    taints = []
    for index, taint in enumerate(reader.lst(item.get("taints"), f"{path}.taints")):
        taint_obj = reader.obj(taint, f"{path}.taints[{index}]")
        taints.append(
            Taint(
                reader.string(taint_obj.get("key"), f"{path}.taints[{index}].key") or "",
                reader.string(taint_obj.get("value"), f"{path}.taints[{index}].value") or "",
                reader.string(taint_obj.get("effect"), f"{path}.taints[{index}].effect") or "",
            )
        )
    return Device(
        name=name,
        attributes=attributes,
        capacity=capacity,
        consumes_counters=tuple(consumes),
        node_name=reader.string(item.get("nodeName"), f"{path}.nodeName"),
        node_selector=_node_selector(reader, item.get("nodeSelector"), f"{path}.nodeSelector"),
        node_selector_raw=item.get("nodeSelector"),
        all_nodes=reader.boolean(item.get("allNodes"), f"{path}.allNodes"),
        taints=tuple(taints),
        binds_to_node=bool(reader.boolean(item.get("bindsToNode"), f"{path}.bindsToNode")),
        binding_conditions=reader.strings(
            item.get("bindingConditions"), f"{path}.bindingConditions"
        ),
        binding_failure_conditions=reader.strings(
            item.get("bindingFailureConditions"), f"{path}.bindingFailureConditions"
        ),
        allow_multiple_allocations=reader.boolean(
            item.get("allowMultipleAllocations"), f"{path}.allowMultipleAllocations"
        ),
    )


def _counter_set(reader: _Reader, raw: Any, path: str) -> CounterSet:
    set_obj = reader.obj(raw, path)
    return CounterSet(
        reader.string(set_obj.get("name"), f"{path}.name", True) or "",
        _counters(reader, set_obj.get("counters"), f"{path}.counters"),
    )


def parse_device(raw: Any, label: str, path: str) -> Device:
    """One entry of a slice's ``spec.devices`` (``path`` names it in errors)."""
    return _device(_Reader(label), raw, path)


def parse_counter_set(raw: Any, label: str, path: str) -> CounterSet:
    """One entry of a slice's ``spec.sharedCounters``."""
    return _counter_set(_Reader(label), raw, path)


def parse_slice(raw: Any, label: str) -> ResourceSlice:
    reader = _Reader(label)
    slice_obj = reader.obj(raw, "resourceSlice", required=True)
    metadata = reader.obj(slice_obj.get("metadata"), "metadata")
    spec = reader.obj(slice_obj.get("spec"), "spec", required=True)
    name = reader.string(metadata.get("name"), "metadata.name") or ""
    reader.label = f"{label} ({name})" if name else label
    pool = reader.obj(spec.get("pool"), "spec.pool", required=True)
    generation = reader.integer(pool.get("generation"), "spec.pool.generation") or 0
    count = reader.integer(pool.get("resourceSliceCount"), "spec.pool.resourceSliceCount")
    if count is None or count <= 0:
        raise reader.fail("spec.pool.resourceSliceCount", "must be greater than zero")
    shared = [
        _counter_set(reader, counter_set, f"spec.sharedCounters[{index}]")
        for index, counter_set in enumerate(
            reader.lst(spec.get("sharedCounters"), "spec.sharedCounters")
        )
    ]
    devices = tuple(
        _device(reader, device, f"spec.devices[{index}]")
        for index, device in enumerate(reader.lst(spec.get("devices"), "spec.devices"))
    )
    return ResourceSlice(
        name=name,
        driver=reader.string(spec.get("driver"), "spec.driver", required=True) or "",
        pool_name=reader.string(pool.get("name"), "spec.pool.name", required=True) or "",
        generation=generation,
        resource_slice_count=count,
        node_name=reader.string(spec.get("nodeName"), "spec.nodeName") or None,
        node_selector=_node_selector(reader, spec.get("nodeSelector"), "spec.nodeSelector"),
        node_selector_raw=spec.get("nodeSelector"),
        all_nodes=reader.boolean(spec.get("allNodes"), "spec.allNodes"),
        per_device_node_selection=reader.boolean(
            spec.get("perDeviceNodeSelection"), "spec.perDeviceNodeSelection"
        ),
        devices=devices,
        shared_counters=tuple(shared),
    )


# --- classes and claims ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceClass:
    name: str
    selectors: tuple[str | None, ...]  # None: a selector without ``cel``
    config: tuple[Mapping[str, Any], ...]


def _selectors(reader: _Reader, raw: Any, path: str) -> tuple[str | None, ...]:
    result: list[str | None] = []
    for index, selector in enumerate(reader.lst(raw, path)):
        selector_obj = reader.obj(selector, f"{path}[{index}]")
        cel_obj = selector_obj.get("cel")
        if cel_obj is None:
            result.append(None)
            continue
        cel_map = reader.obj(cel_obj, f"{path}[{index}].cel")
        result.append(
            reader.string(cel_map.get("expression"), f"{path}[{index}].cel.expression") or ""
        )
    return tuple(result)


def selector_expressions(raw: Any) -> tuple[str | None, ...]:
    """The CEL expressions of a ``selectors`` list as stored, never raising: None stands for a
    selector that is not a CEL selector (the allocator refuses such a class or request)."""
    if not isinstance(raw, list):
        return ()
    return tuple(
        selector["cel"]["expression"]
        if isinstance(selector, dict)
        and isinstance(selector.get("cel"), dict)
        and isinstance(selector["cel"].get("expression"), str)
        else None
        for selector in raw
    )


def _opaque_configs(reader: _Reader, raw: Any, path: str) -> tuple[Mapping[str, Any], ...]:
    configs = []
    for index, config in enumerate(reader.lst(raw, path)):
        configs.append(reader.obj(config, f"{path}[{index}]"))
    return tuple(configs)


def parse_device_class(raw: Any, label: str) -> DeviceClass:
    reader = _Reader(label)
    class_obj = reader.obj(raw, "deviceClass", required=True)
    metadata = reader.obj(class_obj.get("metadata"), "metadata", required=True)
    name = reader.string(metadata.get("name"), "metadata.name", required=True) or ""
    reader.label = f"{label} ({name})"
    spec = reader.obj(class_obj.get("spec"), "spec")
    return DeviceClass(
        name=name,
        selectors=_selectors(reader, spec.get("selectors"), "spec.selectors"),
        config=_opaque_configs(reader, spec.get("config"), "spec.config"),
    )


@dataclass(frozen=True, slots=True)
class ExactRequest:
    """An ``exactly`` request or one ``firstAvailable`` subrequest."""

    name: str
    device_class_name: str
    selectors: tuple[str | None, ...]
    allocation_mode: str
    count: int
    admin_access: bool | None
    tolerations: tuple[Toleration, ...]
    tolerations_raw: tuple[Mapping[str, Any], ...]
    capacity_requests: Mapping[str, Quantity] | None
    has_capacity: bool


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    name: str
    exactly: ExactRequest | None
    first_available: tuple[ExactRequest, ...]


@dataclass(frozen=True, slots=True)
class Constraint:
    requests: tuple[str, ...]
    match_attribute: str | None
    distinct_attribute: str | None

    def applies_to(self, request: str, subrequest: str | None) -> bool:
        """No list means every request; ``req`` covers its subrequests, ``req/sub`` one of them."""
        if not self.requests:
            return True
        if request in self.requests:
            return True
        return subrequest is not None and f"{request}/{subrequest}" in self.requests


@dataclass(frozen=True, slots=True)
class ClaimConfig:
    requests: tuple[str, ...]
    raw: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    namespace: str
    name: str
    requests: tuple[DeviceRequest, ...]
    constraints: tuple[Constraint, ...]
    config: tuple[ClaimConfig, ...]

    @property
    def key(self) -> str:
        """``namespace/name`` the way Kubernetes logs name objects."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def _exact(reader: _Reader, raw: Any, path: str, name: str) -> ExactRequest:
    item = reader.obj(raw, path)
    mode = reader.string(item.get("allocationMode"), f"{path}.allocationMode") or "ExactCount"
    count = reader.integer(item.get("count"), f"{path}.count")
    if count is None:
        count = 1 if mode == "ExactCount" else 0
    tolerations = []
    tolerations_raw = []
    for index, toleration in enumerate(reader.lst(item.get("tolerations"), f"{path}.tolerations")):
        toleration_path = f"{path}.tolerations[{index}]"
        toleration_obj = reader.obj(toleration, toleration_path)
        tolerations_raw.append(toleration_obj)
        tolerations.append(
            Toleration(
                key=reader.string(toleration_obj.get("key"), f"{toleration_path}.key") or "",
                operator=reader.string(
                    toleration_obj.get("operator"), f"{toleration_path}.operator"
                )
                or "Equal",
                value=reader.string(toleration_obj.get("value"), f"{toleration_path}.value") or "",
                effect=reader.string(toleration_obj.get("effect"), f"{toleration_path}.effect")
                or "",
            )
        )
    capacity_raw = item.get("capacity")
    capacity_requests: dict[str, Quantity] | None = None
    if capacity_raw is not None:
        capacity_obj = reader.obj(capacity_raw, f"{path}.capacity")
        requests_raw = capacity_obj.get("requests")
        if requests_raw is not None:
            capacity_requests = {
                str(key): reader.quantity(value, f"{path}.capacity.requests[{key}]")
                for key, value in reader.obj(requests_raw, f"{path}.capacity.requests").items()
            }
    return ExactRequest(
        name=name,
        device_class_name=reader.string(item.get("deviceClassName"), f"{path}.deviceClassName")
        or "",
        selectors=_selectors(reader, item.get("selectors"), f"{path}.selectors"),
        allocation_mode=mode,
        count=count,
        admin_access=reader.boolean(item.get("adminAccess"), f"{path}.adminAccess"),
        tolerations=tuple(tolerations),
        tolerations_raw=tuple(tolerations_raw),
        capacity_requests=capacity_requests,
        has_capacity=capacity_raw is not None,
    )


def parse_claim(raw: Any, label: str) -> ResourceClaim:
    reader = _Reader(label)
    claim_obj = reader.obj(raw, "resourceClaim", required=True)
    metadata = reader.obj(claim_obj.get("metadata"), "metadata")
    name = reader.string(metadata.get("name"), "metadata.name") or ""
    namespace = reader.string(metadata.get("namespace"), "metadata.namespace") or ""
    reader.label = f"{label} ({namespace}/{name})" if namespace else f"{label} ({name})"
    spec = reader.obj(claim_obj.get("spec"), "spec")
    devices = reader.obj(spec.get("devices"), "spec.devices")
    requests = []
    for index, request in enumerate(reader.lst(devices.get("requests"), "spec.devices.requests")):
        path = f"spec.devices.requests[{index}]"
        request_obj = reader.obj(request, path)
        request_name = reader.string(request_obj.get("name"), f"{path}.name", required=True) or ""
        exactly = None
        if request_obj.get("exactly") is not None:
            exactly = _exact(reader, request_obj["exactly"], f"{path}.exactly", request_name)
        subrequests = []
        for number, subrequest in enumerate(
            reader.lst(request_obj.get("firstAvailable"), f"{path}.firstAvailable")
        ):
            sub_path = f"{path}.firstAvailable[{number}]"
            sub_obj = reader.obj(subrequest, sub_path)
            sub_name = reader.string(sub_obj.get("name"), f"{sub_path}.name", required=True) or ""
            subrequests.append(_exact(reader, sub_obj, sub_path, sub_name))
        if exactly is None and not subrequests:
            raise reader.fail(path, "must set exactly or firstAvailable")
        if exactly is not None and subrequests:
            raise reader.fail(path, "must not set both exactly and firstAvailable")
        requests.append(DeviceRequest(request_name, exactly, tuple(subrequests)))
    constraints = []
    for index, constraint in enumerate(
        reader.lst(devices.get("constraints"), "spec.devices.constraints")
    ):
        path = f"spec.devices.constraints[{index}]"
        constraint_obj = reader.obj(constraint, path)
        constraints.append(
            Constraint(
                requests=reader.strings(constraint_obj.get("requests"), f"{path}.requests"),
                match_attribute=reader.string(
                    constraint_obj.get("matchAttribute"), f"{path}.matchAttribute"
                ),
                distinct_attribute=reader.string(
                    constraint_obj.get("distinctAttribute"), f"{path}.distinctAttribute"
                ),
            )
        )
    configs = []
    for index, config in enumerate(reader.lst(devices.get("config"), "spec.devices.config")):
        path = f"spec.devices.config[{index}]"
        config_obj = reader.obj(config, path)
        configs.append(
            ClaimConfig(reader.strings(config_obj.get("requests"), f"{path}.requests"), config_obj)
        )
    return ResourceClaim(namespace, name, tuple(requests), tuple(constraints), tuple(configs))


@dataclass(frozen=True, slots=True)
class AllocatedDevice:
    """One result of an already-allocated claim."""

    driver: str
    pool: str
    device: str
    admin_access: bool
    share_id: str | None
    consumed_capacity: Mapping[str, Quantity] = field(default_factory=dict)


def parse_allocated_results(raw: Any, label: str) -> list[AllocatedDevice]:
    """The device results of one already-allocated claim (no allocation → no results)."""
    reader = _Reader(label)
    claim_obj = reader.obj(raw, "resourceClaim", required=True)
    status = reader.obj(claim_obj.get("status"), "status")
    allocation = reader.obj(status.get("allocation"), "status.allocation")
    devices = reader.obj(allocation.get("devices"), "status.allocation.devices")
    results = []
    for index, result in enumerate(
        reader.lst(devices.get("results"), "status.allocation.devices.results")
    ):
        path = f"status.allocation.devices.results[{index}]"
        result_obj = reader.obj(result, path)
        consumed = {
            str(key): reader.quantity(value, f"{path}.consumedCapacity[{key}]")
            for key, value in reader.obj(
                result_obj.get("consumedCapacity"), f"{path}.consumedCapacity"
            ).items()
        }
        results.append(
            AllocatedDevice(
                driver=reader.string(result_obj.get("driver"), f"{path}.driver", True) or "",
                pool=reader.string(result_obj.get("pool"), f"{path}.pool", True) or "",
                device=reader.string(result_obj.get("device"), f"{path}.device", True) or "",
                admin_access=bool(
                    reader.boolean(result_obj.get("adminAccess"), f"{path}.adminAccess")
                ),
                share_id=reader.string(result_obj.get("shareID"), f"{path}.shareID"),
                consumed_capacity=consumed,
            )
        )
    return results
