"""ResourceSlices and their devices, capacities, counters and taints."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dra.model.nodes import NodeSelector, read_node_selector
from dra.model.reader import AttributeValue, Reader
from dra.quantity import Quantity

__all__ = [
    "Taint",
    "Toleration",
    "CapacityPolicy",
    "DeviceCapacity",
    "CounterConsumption",
    "CounterSet",
    "Device",
    "ResourceSlice",
    "parse_device",
    "parse_counter_set",
    "parse_slice",
]


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


def _attribute(reader: Reader, raw: Any, path: str) -> AttributeValue:
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


def _counters(reader: Reader, raw: Any, path: str) -> dict[str, Quantity]:
    counters = {}
    for name, counter in reader.obj(raw, path).items():
        counter_obj = reader.obj(counter, f"{path}[{name}]")
        counters[str(name)] = reader.quantity(counter_obj.get("value"), f"{path}[{name}].value")
    return counters


def _policy(reader: Reader, raw: Any, path: str) -> CapacityPolicy | None:
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


# Attribute values written the usual way, ``{"<kind>": value}`` with a value of the kind's type,
# read without the general path below (half of parsing a case is attributes).
_SIMPLE_ATTRIBUTES: dict[str, tuple[str, type]] = {
    "int": ("int", int),
    "bool": ("bool", bool),
    "string": ("string", str),
    "version": ("version", str),
}


def _attributes(reader: Reader, raw: Any, path: str) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {}
    if raw is None:
        return attributes
    if type(raw) is not dict:
        raw = reader.obj(raw, f"{path}.attributes")
    for key, value in raw.items():
        if type(value) is dict and len(value) == 1:
            ((json_key, item),) = value.items()
            simple = _SIMPLE_ATTRIBUTES.get(json_key)
            if simple is not None and type(item) is simple[1]:
                attributes[str(key)] = (simple[0], item)
                continue
        attributes[str(key)] = _attribute(reader, value, f"{path}.attributes[{key}]")
    return attributes


# Capacities written as ``{"value": "<quantity>"}`` alone, by quantity string: devices of one
# model share them (DeviceCapacity is immutable). Bounded for long-lived processes.
_PLAIN_CAPACITIES: dict[str, DeviceCapacity] = {}
_PLAIN_CAPACITIES_LIMIT = 4096


def _capacity(reader: Reader, raw: Any, path: str) -> dict[str, DeviceCapacity]:
    capacity: dict[str, DeviceCapacity] = {}
    if raw is None:
        return capacity
    if type(raw) is not dict:
        raw = reader.obj(raw, f"{path}.capacity")
    for key, value in raw.items():
        amount = value.get("value") if type(value) is dict and len(value) == 1 else None
        if type(amount) is str:
            shared = _PLAIN_CAPACITIES.get(amount)
            if shared is None:
                shared = DeviceCapacity(
                    reader.quantity(amount, f"{path}.capacity[{key}].value"), None
                )
                if len(_PLAIN_CAPACITIES) >= _PLAIN_CAPACITIES_LIMIT:
                    _PLAIN_CAPACITIES.clear()
                _PLAIN_CAPACITIES[amount] = shared
            capacity[str(key)] = shared
            continue
        capacity_obj = reader.obj(value, f"{path}.capacity[{key}]")
        policy = capacity_obj.get("requestPolicy")
        capacity[str(key)] = DeviceCapacity(
            reader.quantity(capacity_obj.get("value"), f"{path}.capacity[{key}].value"),
            None
            if policy is None
            else _policy(reader, policy, f"{path}.capacity[{key}].requestPolicy"),
        )
    return capacity


def _consumes_counters(reader: Reader, raw: Any, path: str) -> tuple[CounterConsumption, ...]:
    consumes = []
    for index, consumption in enumerate(reader.lst(raw, f"{path}.consumesCounters")):
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
    return tuple(consumes)


def _taints(reader: Reader, raw: Any, path: str) -> tuple[Taint, ...]:
    taints = []
    for index, taint in enumerate(reader.lst(raw, f"{path}.taints")):
        taint_obj = reader.obj(taint, f"{path}.taints[{index}]")
        taints.append(
            Taint(
                reader.string(taint_obj.get("key"), f"{path}.taints[{index}].key") or "",
                reader.string(taint_obj.get("value"), f"{path}.taints[{index}].value") or "",
                reader.string(taint_obj.get("effect"), f"{path}.taints[{index}].effect") or "",
            )
        )
    return tuple(taints)


_PLAIN_DEVICE_FIELDS = frozenset({"name", "attributes", "capacity"})


def _device(reader: Reader, raw: Any, path: str) -> Device:
    # Fields are read in a fixed order (the first error reported is the first in that order);
    # absent optional fields skip their reader calls, which would only build error paths.
    item = reader.obj(raw, path)
    name = item.get("name")
    if type(name) is not str or not name:
        name = reader.string(name, f"{path}.name", required=True) or ""
    attributes = _attributes(reader, item.get("attributes"), path)
    capacity = _capacity(reader, item.get("capacity"), path)
    if item.keys() <= _PLAIN_DEVICE_FIELDS:
        return Device(name, attributes, capacity)
    get = item.get
    consumes = get("consumesCounters")
    taints = get("taints")
    node_name = get("nodeName")
    node_selector = get("nodeSelector")
    all_nodes = get("allNodes")
    binds_to_node = get("bindsToNode")
    binding_conditions = get("bindingConditions")
    binding_failure_conditions = get("bindingFailureConditions")
    allow_multiple = get("allowMultipleAllocations")
    return Device(
        name=name,
        attributes=attributes,
        capacity=capacity,
        consumes_counters=() if consumes is None else _consumes_counters(reader, consumes, path),
        taints=() if taints is None else _taints(reader, taints, path),
        node_name=None if node_name is None else reader.string(node_name, f"{path}.nodeName"),
        node_selector=None
        if node_selector is None
        else read_node_selector(reader, node_selector, f"{path}.nodeSelector"),
        node_selector_raw=node_selector,
        all_nodes=None if all_nodes is None else reader.boolean(all_nodes, f"{path}.allNodes"),
        binds_to_node=binds_to_node is not None
        and bool(reader.boolean(binds_to_node, f"{path}.bindsToNode")),
        binding_conditions=()
        if binding_conditions is None
        else reader.strings(binding_conditions, f"{path}.bindingConditions"),
        binding_failure_conditions=()
        if binding_failure_conditions is None
        else reader.strings(binding_failure_conditions, f"{path}.bindingFailureConditions"),
        allow_multiple_allocations=None
        if allow_multiple is None
        else reader.boolean(allow_multiple, f"{path}.allowMultipleAllocations"),
    )


def _counter_set(reader: Reader, raw: Any, path: str) -> CounterSet:
    set_obj = reader.obj(raw, path)
    return CounterSet(
        reader.string(set_obj.get("name"), f"{path}.name", True) or "",
        _counters(reader, set_obj.get("counters"), f"{path}.counters"),
    )


def parse_device(raw: Any, label: str, path: str) -> Device:
    """One entry of a slice's ``spec.devices`` (``path`` names it in errors)."""
    return _device(Reader(label), raw, path)


def parse_counter_set(raw: Any, label: str, path: str) -> CounterSet:
    """One entry of a slice's ``spec.sharedCounters``."""
    return _counter_set(Reader(label), raw, path)


def parse_slice(raw: Any, label: str) -> ResourceSlice:
    reader = Reader(label)
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
        node_selector=read_node_selector(reader, spec.get("nodeSelector"), "spec.nodeSelector"),
        node_selector_raw=spec.get("nodeSelector"),
        all_nodes=reader.boolean(spec.get("allNodes"), "spec.allNodes"),
        per_device_node_selection=reader.boolean(
            spec.get("perDeviceNodeSelection"), "spec.perDeviceNodeSelection"
        ),
        devices=devices,
        shared_counters=tuple(shared),
    )
