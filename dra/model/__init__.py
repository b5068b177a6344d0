"""Typed, immutable views over resource.k8s.io/v1 JSON (and the core Node), parsed once.

Every parser takes the raw object as the API serves it and raises :class:`InvalidObject` with a
message naming the object and the field (``resourceSlices[2] (node-1-gpu): spec.pool.name:
required``). Fields the allocator does not read are ignored; ``raw`` keeps the original where
results need to copy parts of it (opaque configs, node selectors).
"""

from dra.model.claims import (
    AllocatedDevice,
    ClaimConfig,
    Constraint,
    DeviceClass,
    DeviceRequest,
    ExactRequest,
    ResourceClaim,
    parse_allocated_results,
    parse_claim,
    parse_device_class,
    selector_expressions,
)
from dra.model.nodes import (
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    parse_node,
    parse_node_selector,
)
from dra.model.reader import (
    AttributeValue,
    InvalidObject,
    qualify,
)
from dra.model.slices import (
    CapacityPolicy,
    CounterConsumption,
    CounterSet,
    Device,
    DeviceCapacity,
    ResourceSlice,
    Taint,
    Toleration,
    parse_counter_set,
    parse_device,
    parse_slice,
)

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
    "parse_node_selector",
    "parse_slice",
    "parse_device_class",
    "parse_claim",
    "parse_allocated_results",
    "qualify",
    "selector_expressions",
]
