"""The shapes of the API's answers the client returns, as typed dictionaries (the JSON as the
portal sends it, so nothing is lost when the API adds a field). The OpenAPI schema at
``/api/v1/schema/`` is the full reference."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

__all__ = [
    "ClaimRequest",
    "ClaimState",
    "ConfigurationChange",
    "ConfigurationOutcome",
    "CurrentUser",
    "Device",
    "DeviceClass",
    "FitReport",
    "Membership",
    "Node",
    "Page",
    "TERMINAL_STATES",
    "WhyPending",
]

ClaimState = Literal[
    "pending_approval",
    "submitted",
    "allocating",
    "applied",
    "in_use",
    "releasing",
    "released",
    "expired",
    "failed",
    "denied",
    "withdrawn",
]
TERMINAL_STATES = frozenset({"released", "expired", "failed", "denied", "withdrawn"})


class Page(TypedDict, total=False):
    count: int
    next: str | None
    previous: str | None
    next_cursor: str | None
    results: list[dict[str, Any]]


class Membership(TypedDict):
    tenant: str
    username: str
    role: Literal["member", "tenant_admin"]


class CurrentUser(TypedDict):
    id: int
    username: str
    email: str
    first_name: str
    last_name: str
    is_portal_admin: bool
    memberships: list[Membership]


class Device(TypedDict, total=False):
    url: str
    driver: str
    pool: str
    name: str
    node_name: str | None
    model_name: str
    memory_bytes: int | None
    state: str
    held_by: list[dict[str, Any]]
    attributes: dict[str, Any]
    capacity: dict[str, Any]


class Node(TypedDict, total=False):
    url: str
    name: str
    is_ready: bool
    is_schedulable: bool
    device_count: int
    free_count: int
    allocated_count: int
    shared_count: int
    gpus: list[dict[str, Any]]
    problems: list[str]


class DeviceClass(TypedDict, total=False):
    url: str
    name: str
    selectors: list[str]
    drivers: list[str]
    matching_device_count: int
    free_device_count: int
    problems: list[str]


class ClaimRequest(TypedDict, total=False):
    id: str
    url: str
    tenant: str
    namespace: str
    name: str
    device_class: str
    mode: str
    state: ClaimState
    reason: str
    held_devices: int
    lease: str | None
    expires_at: str | None
    node: str | None
    devices: list[dict[str, Any]]
    approval_reasons: list[str]
    created_at: str
    applied_at: str | None


class FitReport(TypedDict, total=False):
    fits: bool
    allocatable: bool
    tenant: str
    mode: str
    lease: str | None
    held_devices: int
    node: str | None
    devices: list[dict[str, Any]]
    error: str | None
    explanations: list[dict[str, Any]]
    quota: dict[str, Any]
    needs_approval: bool
    approval_reasons: list[str]


class WhyPending(TypedDict, total=False):
    pending: bool
    fits: bool
    node: str | None
    error: str | None
    funnels: list[dict[str, Any]]
    hints: list[str]


class ConfigurationChange(TypedDict):
    op: Literal["create", "update", "delete"]
    kind: Literal["tenant", "namespace", "member", "quota"]
    tenant: str
    name: str
    values: dict[str, dict[str, Any]]


class ConfigurationOutcome(TypedDict):
    applied: bool
    changes: list[ConfigurationChange]
