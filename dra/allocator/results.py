"""Assembling ``status.allocation`` (resource.k8s.io/v1 AllocationResult JSON) for a claim.

Keys appear in Go's struct-field order and empty optional fields are omitted exactly where the
API's ``omitempty`` tags omit them, so the output is byte-stable and round-trips through the API
types (dra-semantics §13).
"""

from __future__ import annotations

from typing import Any

from dra.allocator.search import ClaimAllocation
from dra.features import Features
from dra.model import NodeSelectorRequirement

__all__ = ["allocation_result"]


def _device_results(allocation: ClaimAllocation, features: Features) -> list[dict[str, Any]]:
    results = []
    for result in allocation.results:
        device = result.candidate.device
        entry: dict[str, Any] = {
            "request": result.request,
            "driver": result.candidate.pool.driver,
            "pool": result.candidate.pool.name,
            "device": device.name,
        }
        if result.admin_access:
            entry["adminAccess"] = True
        if result.tolerations:
            entry["tolerations"] = [dict(toleration) for toleration in result.tolerations]
        if features.binding_and_status:
            if device.binding_conditions:
                entry["bindingConditions"] = list(device.binding_conditions)
            if device.binding_failure_conditions:
                entry["bindingFailureConditions"] = list(device.binding_failure_conditions)
        if result.share_id is not None:
            entry["shareID"] = result.share_id
        if result.consumed_capacity:
            entry["consumedCapacity"] = {
                name: str(amount) for name, amount in sorted(result.consumed_capacity.items())
            }
        results.append(entry)
    return results


def _config_entry(source: str, requests: list[str] | tuple[str, ...], raw: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"source": source}
    if requests:
        entry["requests"] = list(requests)
    if isinstance(raw, dict) and raw.get("opaque") is not None:
        entry["opaque"] = raw["opaque"]
    return entry


def _configs(allocation: ClaimAllocation) -> list[dict[str, Any]]:
    configs: list[dict[str, Any]] = []
    class_ranges: dict[str, tuple[int, int]] = {}
    for data in allocation.chosen:
        device_class = data.device_class
        if device_class is None:
            continue
        existing = class_ranges.get(device_class.name)
        if existing is not None:
            for index in range(*existing):
                configs[index].setdefault("requests", []).append(data.name)
            continue
        first = len(configs)
        for class_config in device_class.config:
            configs.append(_config_entry("FromClass", [data.name], class_config))
        class_ranges[device_class.name] = (first, len(configs))
    claim = allocation.claim
    for config in claim.config:
        if not config.requests:
            configs.append(_config_entry("FromClaim", (), config.raw))
            continue
        for request, data in zip(claim.requests, allocation.chosen, strict=True):
            if request.name in config.requests:
                configs.append(_config_entry("FromClaim", config.requests, config.raw))
                continue
            if data.parent is not None and f"{request.name}/{data.request.name}" in config.requests:
                configs.append(_config_entry("FromClaim", config.requests, config.raw))
    return configs


def _same_requirement(left: NodeSelectorRequirement, right: NodeSelectorRequirement) -> bool:
    return (
        left.key == right.key
        and left.operator == right.operator
        and set(left.values) == set(right.values)
    )


def _node_selector(
    allocation: ClaimAllocation, node_name: str, features: Features
) -> dict[str, Any] | None:
    binds_to_node_known = features.newest_variant
    fields: list[NodeSelectorRequirement] = []
    expressions: list[NodeSelectorRequirement] = []
    for result in allocation.results:
        resource_slice = result.candidate.slice
        device = result.candidate.device
        if resource_slice.per_device_node_selection:
            local, selector = device.node_name, device.node_selector
        else:
            local, selector = resource_slice.node_name, resource_slice.node_selector
        if local or (binds_to_node_known and device.binds_to_node):
            return {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [node_name]}
                        ]
                    }
                ]
            }
        if selector is not None and len(selector.terms) == 1:
            term = selector.terms[0]
            for requirement in term.match_fields:
                if not any(_same_requirement(requirement, known) for known in fields):
                    fields.append(requirement)
            for requirement in term.match_expressions:
                if not any(_same_requirement(requirement, known) for known in expressions):
                    expressions.append(requirement)
    if not fields and not expressions:
        return None
    term_json: dict[str, Any] = {}
    if expressions:
        term_json["matchExpressions"] = [requirement.to_json() for requirement in expressions]
    if fields:
        term_json["matchFields"] = [requirement.to_json() for requirement in fields]
    return {"nodeSelectorTerms": [term_json]}


def allocation_result(
    allocation: ClaimAllocation, node_name: str, features: Features
) -> dict[str, Any]:
    """The claim's ``status.allocation`` as JSON-ready dicts."""
    devices: dict[str, Any] = {}
    results = _device_results(allocation, features)
    if results:
        devices["results"] = results
    configs = _configs(allocation)
    if configs:
        devices["config"] = configs
    allocation_json: dict[str, Any] = {"devices": devices}
    selector = _node_selector(allocation, node_name, features)
    if selector is not None:
        allocation_json["nodeSelector"] = selector
    return allocation_json
