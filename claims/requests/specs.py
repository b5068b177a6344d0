"""What a tenant asks for, checked field by field, and the ResourceClaim spec built from it.

:class:`ClaimInput` is the one shape every entry point (form, API, admin, command) fills in;
:func:`build_spec` turns it into ``spec`` of a ``resource.k8s.io/v1`` ResourceClaim (or the
``spec.spec`` of a ResourceClaimTemplate). Nothing here touches the database: checks against the
tenant (namespaces, quota) and the inventory (classes, attributes) live in
``claims.requests.services``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from dra.cel import compile_selector
from portal.models.validators import DNS_SUBDOMAIN

__all__ = [
    "MAX_COUNT",
    "PRESETS",
    "REQUEST_NAME",
    "Alternative",
    "ClaimInput",
    "SpecErrors",
    "build_spec",
    "check_input",
    "resolve_preset",
]

MAX_COUNT = 32
REQUEST_NAME = "devices"
MAX_SELECTORS = 8
MAX_ALTERNATIVES = 8
MAX_CONFIG_BYTES = 16 * 1024
_QUALIFIED = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9_.]*(/[A-Za-z0-9][-A-Za-z0-9_.]*)?$")

# Constraint presets: a label and the attribute names that express it, in order of preference.
# Unqualified names match that identifier in any driver's own domain.
PRESETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "nvlink": ("Same NVLink clique", ("cliqueID", "cliqueId", "nvlinkClique")),
    "pcie": ("Same PCIe root", ("resource.kubernetes.io/pcieRoot",)),
    "numa": ("Same NUMA node", ("resource.kubernetes.io/numaNode",)),
}


class SpecErrors(Exception):
    """Field-level problems with a request: ``errors`` maps field names to messages."""

    def __init__(self, errors: Mapping[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))
        self.errors = dict(errors)


@dataclass(frozen=True, slots=True)
class Alternative:
    """One ``firstAvailable`` fallback: another class, count or selectors."""

    device_class_name: str
    count: int | None = 1  # None: All
    selectors: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "device_class": self.device_class_name,
            "count": "All" if self.count is None else self.count,
            "selectors": list(self.selectors),
        }


@dataclass(frozen=True, slots=True)
class ClaimInput:
    namespace: str
    name: str
    device_class_name: str
    count: int | None = 1  # None: All
    selectors: tuple[str, ...] = ()
    alternatives: tuple[Alternative, ...] = ()
    constraint: str = ""  # a PRESETS key, or ""
    match_attributes: tuple[str, ...] = ()
    distinct_attributes: tuple[str, ...] = ()
    sharing: str = "claim"  # "claim" or "template"
    config: tuple[Mapping[str, Any], ...] = ()  # [{"driver": ..., "parameters": {...}}]
    admin_access: bool = False
    lease: timedelta | None = None
    mode: str = ""  # "", or an AllocationMode value (portal admins only)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The input as stored on the request (and shown back on its page)."""
        return {
            "namespace": self.namespace,
            "name": self.name,
            "device_class": self.device_class_name,
            "count": "All" if self.count is None else self.count,
            "selectors": list(self.selectors),
            "alternatives": [alternative.to_json() for alternative in self.alternatives],
            "constraint": self.constraint,
            "match_attributes": list(self.match_attributes),
            "distinct_attributes": list(self.distinct_attributes),
            "sharing": self.sharing,
            "config": [dict(item) for item in self.config],
            "admin_access": self.admin_access,
            "lease_seconds": int(self.lease.total_seconds()) if self.lease else None,
            "mode": self.mode,
        }

    @property
    def classes(self) -> list[str]:
        return [self.device_class_name, *(a.device_class_name for a in self.alternatives)]


def _check_count(count: int | None, field_name: str, errors: dict[str, list[str]]) -> None:
    if count is not None and not 1 <= count <= MAX_COUNT:
        errors.setdefault(field_name, []).append(
            f"Ask for 1 to {MAX_COUNT} devices, or All (got {count})."
        )


def _check_selectors(selectors: Iterable[str], field_name: str, errors: dict[str, list[str]]):
    selectors = list(selectors)
    if len(selectors) > MAX_SELECTORS:
        errors.setdefault(field_name, []).append(f"At most {MAX_SELECTORS} selectors.")
        return
    for index, expression in enumerate(selectors, 1):
        if not expression.strip():
            errors.setdefault(field_name, []).append(f"Selector {index} is empty.")
            continue
        compiled = compile_selector(expression)
        if compiled.error is not None:
            errors.setdefault(field_name, []).append(f"Selector {index}: {compiled.error}")


def check_input(claim: ClaimInput) -> None:
    """Raises :class:`SpecErrors` naming every field that is wrong on its own."""
    errors: dict[str, list[str]] = {}
    if not claim.name or len(claim.name) > 253 or not DNS_SUBDOMAIN.fullmatch(claim.name):
        errors["name"] = [
            "Enter a Kubernetes object name: lowercase letters, digits, '-' and '.', starting "
            "and ending with a letter or digit, at most 253 characters."
        ]
    if not claim.namespace:
        errors["namespace"] = ["Choose a namespace."]
    if not claim.device_class_name or not DNS_SUBDOMAIN.fullmatch(claim.device_class_name):
        errors["device_class"] = ["Choose a device class."]
    _check_count(claim.count, "count", errors)
    _check_selectors(claim.selectors, "selectors", errors)
    if len(claim.alternatives) > MAX_ALTERNATIVES:
        errors["alternatives"] = [f"At most {MAX_ALTERNATIVES} alternatives."]
    for index, alternative in enumerate(claim.alternatives, 1):
        if not DNS_SUBDOMAIN.fullmatch(alternative.device_class_name or ""):
            errors.setdefault("alternatives", []).append(
                f"Alternative {index}: choose a device class."
            )
        _check_count(alternative.count, "alternatives", errors)
        _check_selectors(alternative.selectors, "alternatives", errors)
    if claim.constraint and claim.constraint not in PRESETS:
        errors["constraint"] = [
            f"Unknown constraint '{claim.constraint}'; choose one of {', '.join(PRESETS)}."
        ]
    for field_name, names in (
        ("match_attributes", claim.match_attributes),
        ("distinct_attributes", claim.distinct_attributes),
    ):
        for name in names:
            if not _QUALIFIED.match(name) or "/" not in name:
                errors.setdefault(field_name, []).append(
                    f"'{name[:80]}' is not a fully qualified attribute name "
                    "(e.g. resource.kubernetes.io/pcieRoot or gpu.nvidia.com/productName)."
                )
    if claim.sharing not in ("claim", "template"):
        errors["sharing"] = ["Choose 'claim' (one shared claim) or 'template' (one per pod)."]
    for index, item in enumerate(claim.config, 1):
        if not isinstance(item, Mapping) or not DNS_SUBDOMAIN.fullmatch(
            str(item.get("driver", ""))
        ):
            errors.setdefault("config", []).append(f"Config {index}: name the driver.")
        elif not isinstance(item.get("parameters"), Mapping):
            errors.setdefault("config", []).append(
                f"Config {index}: parameters must be a JSON object (the driver's config, e.g. "
                '{"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", ...}).'
            )
        elif len(json.dumps(item["parameters"])) > MAX_CONFIG_BYTES:
            errors.setdefault("config", []).append(
                f"Config {index}: at most {MAX_CONFIG_BYTES // 1024} KiB."
            )
    if claim.lease is not None and claim.lease <= timedelta(0):
        errors["lease"] = ["A lease must be longer than zero."]
    if errors:
        raise SpecErrors(errors)


def resolve_preset(key: str, published: Iterable[str]) -> str | None:
    """The fully qualified attribute a preset stands for in this inventory, or None when no
    device publishes any of its attributes. ``published``: qualified attribute names."""
    published = set(published)
    for candidate in PRESETS[key][1]:
        if "/" in candidate:
            if candidate in published:
                return candidate
            continue
        for name in sorted(published):
            if name.rpartition("/")[2] == candidate:
                return name
    return None


def _exact(device_class: str, count: int | None, selectors: Iterable[str]) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": device_class}
    if count is None:
        body["allocationMode"] = "All"
    else:
        body["allocationMode"] = "ExactCount"
        body["count"] = count
    expressions = [{"cel": {"expression": expression}} for expression in selectors]
    if expressions:
        body["selectors"] = expressions
    return body


def build_spec(claim: ClaimInput, constraint_attribute: str | None = None) -> dict[str, Any]:
    """``spec`` of the ResourceClaim: one request named ``devices`` (with ``firstAvailable``
    when there are alternatives), the constraints, and the opaque driver config.
    ``constraint_attribute``: what the preset resolved to in this inventory."""
    request: dict[str, Any] = {"name": REQUEST_NAME}
    if claim.alternatives:
        options = [("primary", claim.device_class_name, claim.count, claim.selectors)] + [
            (f"alt-{index}", a.device_class_name, a.count, a.selectors)
            for index, a in enumerate(claim.alternatives, 1)
        ]
        request["firstAvailable"] = [
            {"name": name, **_exact(cls, count, selectors)}
            for name, cls, count, selectors in options
        ]
    else:
        request["exactly"] = _exact(claim.device_class_name, claim.count, claim.selectors)
        if claim.admin_access:
            request["exactly"]["adminAccess"] = True
    devices: dict[str, Any] = {"requests": [request]}
    constraints = []
    match = list(
        dict.fromkeys(
            [*([constraint_attribute] if constraint_attribute else []), *claim.match_attributes]
        )
    )
    for name in match:
        constraints.append({"requests": [REQUEST_NAME], "matchAttribute": name})
    for name in dict.fromkeys(claim.distinct_attributes):
        constraints.append({"requests": [REQUEST_NAME], "distinctAttribute": name})
    if constraints:
        devices["constraints"] = constraints
    if claim.config:
        devices["config"] = [
            {
                "requests": [REQUEST_NAME],
                "opaque": {"driver": item["driver"], "parameters": dict(item["parameters"])},
            }
            for item in claim.config
        ]
    return {"devices": devices}
