"""API object → row values. Pure: no ORM, no I/O, testable on plain dicts.

Each ``map_*`` function takes one object as the API server sent it and returns a ``Mapped``:
the column values of its row, the child rows (devices, counter sets, allocated devices,
consumers) and the problems found. A malformed object is never rejected here: whatever can be
read is returned, the rest is reported in ``problems`` so the row is stored raw and flagged.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from claims.models.allocation_records import request_device_classes
from dra.model import (
    AttributeValue,
    Device,
    InvalidObject,
    ResourceSlice,
    parse_counter_set,
    parse_device,
    parse_slice,
)
from kube.kinds import KINDS, Kind

__all__ = ["MIRRORED_KINDS", "Mapped", "map_object", "normalized", "resource_version_of"]

# Watched in this order on a cold start, so that rows others point at exist first.
MIRRORED_KINDS = [
    Kind.NAMESPACES,
    Kind.NODES,
    Kind.DEVICE_CLASSES,
    Kind.RESOURCE_SLICES,
    Kind.RESOURCE_CLAIM_TEMPLATES,
    Kind.RESOURCE_CLAIMS,
    Kind.PODS,
]

# Well-known attributes: the driver's own (qualified or not) and the standard domain's.
MODEL_ATTRIBUTES = ["productName", "model", "name"]
STANDARD_DOMAIN = "resource.kubernetes.io"
STANDARD_RESOURCES = {"cpu", "memory", "pods", "ephemeral-storage"}


@dataclass
class Mapped:
    fields: dict[str, Any]
    children: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    # The DRA core's parse of a slice that parsed whole (for the device states), else None.
    parsed: ResourceSlice | None = None


def normalized(kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
    """The object with ``apiVersion`` and ``kind`` set: list items arrive without them."""
    info = KINDS[kind]
    if obj.get("apiVersion") == info.api_version and obj.get("kind") == info.kind:
        return obj
    return {"apiVersion": info.api_version, "kind": info.kind, **obj}


def resource_version_of(obj: dict[str, Any]) -> str:
    metadata = obj.get("metadata")
    return str(metadata.get("resourceVersion", "")) if isinstance(metadata, dict) else ""


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _timestamp(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _common(kind: Kind, obj: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        problems.append("metadata is missing or not an object")
        metadata = {}
    for key in ("uid", "name", "resourceVersion"):
        if not isinstance(metadata.get(key), str) or not metadata.get(key):
            problems.append(f"metadata.{key} is missing")
    fields: dict[str, Any] = {
        "uid": str(metadata.get("uid") or ""),
        "name": str(metadata.get("name") or "")[:253],
        "resource_version": resource_version_of(obj),
        "raw": normalized(kind, obj),
        "created_at": _timestamp(metadata.get("creationTimestamp")),
    }
    if KINDS[kind].namespaced:
        fields["namespace"] = str(metadata.get("namespace") or "")[:63]
        if not fields["namespace"]:
            problems.append("metadata.namespace is missing")
    return fields


def _text(value: AttributeValue | None) -> str:
    """An attribute's value as text ("" when absent)."""
    return "" if value is None else str(value[1])


def _device_row(
    raw: Any,
    index: int,
    *,
    label: str,
    driver: str,
    pool: str,
    slice_node: str,
    parsed: Device | None = None,
) -> dict[str, Any]:
    """The row of one ``spec.devices`` entry, parsed by the DRA core (raises InvalidObject)
    unless the whole slice was (``parsed``)."""
    device = parsed if parsed is not None else parse_device(raw, label, f"spec.devices[{index}]")
    memory = device.capacity.get("memory")
    model = next(
        (
            text
            for name in MODEL_ATTRIBUTES
            if (text := _text(device.attribute(f"{driver}/{name}", driver)))
        ),
        "",
    )
    return {
        "driver": driver,
        "pool_name": pool,
        "name": device.name[:63],
        "node_name": (device.node_name or slice_node)[:253],
        "attributes": _dict(raw.get("attributes")),
        "capacity": _dict(raw.get("capacity")),
        "consumes_counters": _list(raw.get("consumesCounters")),
        "taints": _list(raw.get("taints")),
        "is_tainted": any(t.effect in ("NoSchedule", "NoExecute") for t in device.taints),
        "allow_multiple_allocations": device.allow_multiple_allocations is True,
        "device_type": _text(device.attribute(f"{driver}/type", driver))[:63],
        "model_name": model[:200],
        "uuid": _text(device.attribute(f"{driver}/uuid", driver))[:100],
        "parent_uuid": _text(device.attribute(f"{driver}/parentUUID", driver))[:100],
        "pci_bus_id": _text(device.attribute(f"{STANDARD_DOMAIN}/pciBusID", driver))[:32],
        "pcie_root": _text(device.attribute(f"{STANDARD_DOMAIN}/pcieRoot", driver))[:64],
        "memory_bytes": memory.value.ceil_int64() if memory is not None else None,
        "raw": raw,
    }


def map_resource_slice(obj: dict[str, Any]) -> Mapped:
    """A slice and its devices and counter sets.

    Devices and counter sets are parsed one by one with the DRA core's parser (the allocator's),
    so a malformed entry is reported and left out while the rest of the slice is mirrored.
    """
    problems: list[str] = []
    fields = _common(Kind.RESOURCE_SLICES, obj, problems)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        problems.append("spec is missing")
        spec = {}
    pool = _dict(spec.get("pool"))
    driver = _string(spec.get("driver"))
    if not driver:
        problems.append("spec.driver is missing")
    pool_name = _string(pool.get("name"))
    if not pool_name:
        problems.append("spec.pool.name is missing")
    selection = ""
    for key in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection"):
        if spec.get(key):
            selection = key
            break
    node_name = _string(spec.get("nodeName"))
    generation = pool.get("generation", 0)
    count = pool.get("resourceSliceCount", 1)
    if not isinstance(generation, int) or not isinstance(count, int):
        problems.append("spec.pool.generation / resourceSliceCount are not integers")
    label = fields["name"] or "resourceSlice"
    try:
        parsed: ResourceSlice | None = parse_slice(obj, label)
    except InvalidObject:
        parsed = None  # read entry by entry below, to report each problem
    devices: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, device in enumerate(_list(spec.get("devices"))):
        try:
            row = _device_row(
                device,
                index,
                label=label,
                driver=driver,
                pool=pool_name,
                slice_node=node_name,
                parsed=parsed.devices[index] if parsed is not None else None,
            )
        except InvalidObject as error:
            problems.append(str(error).removeprefix(f"{label}: "))
            continue
        if row["name"] in seen:
            problems.append(f"spec.devices[{index}]: device name {row['name']} repeats")
            continue
        seen.add(row["name"])
        devices.append(row)
    if "devices" in spec and not isinstance(spec.get("devices"), list):
        problems.append("spec.devices: must be a list")
    counter_sets = []
    for index, entry in enumerate(_list(spec.get("sharedCounters"))):
        try:
            counter_set = parse_counter_set(entry, label, f"spec.sharedCounters[{index}]")
        except InvalidObject as error:
            problems.append(str(error).removeprefix(f"{label}: "))
            continue
        counter_sets.append(
            {
                "driver": driver,
                "pool_name": pool_name,
                "name": counter_set.name[:63],
                "counters": _dict(entry.get("counters")),
            }
        )
    fields.update(
        driver=driver[:63],
        pool_name=pool_name[:253],
        pool_generation=generation if isinstance(generation, int) else 0,
        resource_slice_count=count if isinstance(count, int) and count >= 0 else 1,
        node_selection=selection,
        node_name=node_name[:253],
        node_selector=spec.get("nodeSelector")
        if isinstance(spec.get("nodeSelector"), dict)
        else None,
        device_count=len(devices),
        spec_digest=spec_digest(spec),
    )
    return Mapped(fields, {"devices": devices, "counter_sets": counter_sets}, problems, parsed)


def spec_digest(spec: dict[str, Any]) -> str:
    """A digest of a slice's spec as the API server sent it: two versions of a slice with the
    same digest have the same devices, counters, pool and node (a metadata-only update), so
    the mirror leaves their device rows and states alone."""
    return _digest(spec)


def _digest(value: Any) -> str:
    """128 bits of BLAKE2b over the JSON of ``value``; "" when it cannot be encoded (the
    mirror then compares nothing and rewrites)."""
    try:
        return hashlib.blake2b(msgspec.json.encode(value), digest_size=16).hexdigest()
    except (TypeError, msgspec.EncodeError):
        return ""


def map_device_class(obj: dict[str, Any]) -> Mapped:
    problems: list[str] = []
    fields = _common(Kind.DEVICE_CLASSES, obj, problems)
    spec = _dict(obj.get("spec"))
    fields.update(
        selectors=_list(spec.get("selectors")),
        config=_list(spec.get("config")),
        extended_resource_name=str(spec.get("extendedResourceName") or "")[:253],
    )
    return Mapped(fields, {}, problems)


def map_node(obj: dict[str, Any]) -> Mapped:
    problems: list[str] = []
    fields = _common(Kind.NODES, obj, problems)
    status = _dict(obj.get("status"))
    conditions = {
        c.get("type"): c.get("status")
        for c in _list(status.get("conditions"))
        if isinstance(c, dict)
    }
    allocatable = _dict(status.get("allocatable")) or _dict(status.get("capacity"))
    extended = {
        name: str(value)
        for name, value in allocatable.items()
        if "/" in name
        and not name.startswith("hugepages-")
        and name not in STANDARD_RESOURCES
        and str(value) not in ("0", "")
    }
    fields.update(
        is_ready=conditions.get("Ready") == "True",
        is_schedulable=not _dict(obj.get("spec")).get("unschedulable", False),
        extended_resources=extended,
    )
    return Mapped(fields, {}, problems)


def map_namespace(obj: dict[str, Any]) -> Mapped:
    problems: list[str] = []
    fields = _common(Kind.NAMESPACES, obj, problems)
    fields["phase"] = str(_dict(obj.get("status")).get("phase") or "")[:20]
    return Mapped(fields, {}, problems)


def map_pod(obj: dict[str, Any]) -> Mapped:
    problems: list[str] = []
    fields = _common(Kind.PODS, obj, problems)
    fields["node_name"] = str(_dict(obj.get("spec")).get("nodeName") or "")[:253]
    fields["phase"] = str(_dict(obj.get("status")).get("phase") or "")[:20]
    return Mapped(fields, {}, problems)


def map_resource_claim_template(obj: dict[str, Any]) -> Mapped:
    problems: list[str] = []
    fields = _common(Kind.RESOURCE_CLAIM_TEMPLATES, obj, problems)
    if not isinstance(obj.get("spec"), dict):
        problems.append("spec is missing")
    return Mapped(fields, {}, problems)


def map_resource_claim(obj: dict[str, Any]) -> Mapped:
    problems: list[str] = []
    fields = _common(Kind.RESOURCE_CLAIMS, obj, problems)
    metadata = _dict(obj.get("metadata"))
    status = _dict(obj.get("status"))
    allocation = status.get("allocation")
    results = _list(_dict(_dict(allocation).get("devices")).get("results"))
    classes = request_device_classes(obj.get("spec")) if results else {}
    allocated = []
    for index, result in enumerate(results):
        if not isinstance(result, dict) or not all(
            isinstance(result.get(key), str) for key in ("driver", "pool", "device")
        ):
            problems.append(f"status.allocation.devices.results[{index}] is incomplete")
            continue
        allocated.append(
            {
                "request": str(result.get("request", ""))[:130],
                "device_class_name": classes.get(str(result.get("request", "")), "")[:253],
                "driver": result["driver"][:63],
                "pool": result["pool"][:253],
                "device_name": result["device"][:63],
                "admin_access": result.get("adminAccess") is True,
                "share_id": str(result.get("shareID") or "")[:64],
                "consumed_capacity": result.get("consumedCapacity"),
            }
        )
    consumers = [
        {
            "api_group": str(ref.get("apiGroup") or ""),
            "resource": str(ref.get("resource") or ""),
            "name": str(ref.get("name") or ""),
            "uid": str(ref.get("uid") or ""),
        }
        for ref in _list(status.get("reservedFor"))
        if isinstance(ref, dict)
    ]
    annotations = _dict(metadata.get("annotations"))
    owner_pod = next(
        (
            str(ref.get("name"))
            for ref in _list(metadata.get("ownerReferences"))
            if isinstance(ref, dict) and ref.get("kind") == "Pod"
        ),
        "",
    )
    fields.update(
        is_allocated=isinstance(allocation, dict),
        is_deleting=bool(metadata.get("deletionTimestamp")),
        consumer_count=len(consumers),
        allocation_node_selector=_dict(allocation).get("nodeSelector"),
        pod_claim_name=str(annotations.get("resource.kubernetes.io/pod-claim-name") or "")[:253],
        owner_pod=owner_pod[:253],
        children_digest=_digest([allocated, consumers]),
    )
    return Mapped(fields, {"allocated_devices": allocated, "consumers": consumers}, problems)


MAPPERS: dict[Kind, Callable[[dict[str, Any]], Mapped]] = {
    Kind.DEVICE_CLASSES: map_device_class,
    Kind.RESOURCE_SLICES: map_resource_slice,
    Kind.RESOURCE_CLAIMS: map_resource_claim,
    Kind.RESOURCE_CLAIM_TEMPLATES: map_resource_claim_template,
    Kind.NODES: map_node,
    Kind.NAMESPACES: map_namespace,
    Kind.PODS: map_pod,
}


def map_object(kind: Kind, obj: Any) -> Mapped:
    """Maps any object of a mirrored kind; never raises on malformed input."""
    if not isinstance(obj, dict):
        return Mapped(
            {"uid": "", "name": "", "resource_version": "", "raw": {"value": obj}},
            {},
            [f"object is a {type(obj).__name__}, not a JSON object"],
        )
    try:
        return MAPPERS[kind](obj)
    except (TypeError, ValueError, AttributeError, KeyError) as error:
        problems: list[str] = []
        fields = _common(kind, obj, problems)
        return Mapped(fields, {}, [*problems, f"unreadable: {error}"])
