"""DeviceClasses, ResourceClaims (requests, constraints, configs) and allocation results."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dra.model.reader import Reader
from dra.model.slices import Toleration
from dra.quantity import Quantity

__all__ = [
    "DeviceClass",
    "selector_expressions",
    "parse_device_class",
    "ExactRequest",
    "DeviceRequest",
    "Constraint",
    "ClaimConfig",
    "ResourceClaim",
    "parse_claim",
    "AllocatedDevice",
    "parse_allocated_results",
]


@dataclass(frozen=True, slots=True)
class DeviceClass:
    name: str
    selectors: tuple[str | None, ...]  # None: a selector without ``cel``
    config: tuple[Mapping[str, Any], ...]


def _selectors(reader: Reader, raw: Any, path: str) -> tuple[str | None, ...]:
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


def _opaque_configs(reader: Reader, raw: Any, path: str) -> tuple[Mapping[str, Any], ...]:
    configs = []
    for index, config in enumerate(reader.lst(raw, path)):
        configs.append(reader.obj(config, f"{path}[{index}]"))
    return tuple(configs)


def parse_device_class(raw: Any, label: str) -> DeviceClass:
    reader = Reader(label)
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


def _exact(reader: Reader, raw: Any, path: str, name: str) -> ExactRequest:
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
    reader = Reader(label)
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


_PLAIN_RESULT_FIELDS = frozenset({"request", "driver", "pool", "device"})


def parse_allocated_results(raw: Any, label: str) -> list[AllocatedDevice]:
    """The device results of one already-allocated claim (no allocation → no results)."""
    reader = Reader(label)
    claim_obj = reader.obj(raw, "resourceClaim", required=True)
    status = reader.obj(claim_obj.get("status"), "status")
    allocation = reader.obj(status.get("allocation"), "status.allocation")
    devices = reader.obj(allocation.get("devices"), "status.allocation.devices")
    results = []
    for index, result in enumerate(
        reader.lst(devices.get("results"), "status.allocation.devices.results")
    ):
        if type(result) is dict and result.keys() <= _PLAIN_RESULT_FIELDS:
            # The common result (three names, nothing else), read without building error paths.
            driver, pool, device = result.get("driver"), result.get("pool"), result.get("device")
            names_given = type(driver) is str and type(pool) is str and type(device) is str
            if names_given and driver and pool and device:
                results.append(AllocatedDevice(driver, pool, device, False, None, {}))
                continue
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
