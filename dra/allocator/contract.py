"""The ``manage.py allocate`` contract: one case dict in, one output dict out (DESIGN §5).

A case holds ``name``, optional ``kubernetesVersion`` (1.34 or newer) and ``features`` (known
names only), ``nodes``, ``deviceClasses``, ``resourceSlices``, ``allocatedClaims``, ``claims``
(at least one) and ``node`` (a node name, or null to let the allocator choose). The output is
one of::

    {"name": ..., "status": "allocated", "node": ..., "allocations": [<status.allocation>, ...]}
    {"name": ..., "status": "unsatisfiable"}
    {"name": ..., "status": "error", "error": "..."}

Nothing here raises for bad input: malformed objects, an unsupported version, an unknown
feature and a case without claims become an ``error`` output saying what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dra.allocator.cluster import Cluster, NodeOutcome
from dra.allocator.pools import Inventory
from dra.allocator.results import allocation_result
from dra.allocator.search import DEFAULT_TIMEOUT_SECONDS, AllocatedState
from dra.features import FeatureError, parse_features, parse_version
from dra.model import (
    InvalidObject,
    ResourceClaim,
    parse_allocated_results,
    parse_claim,
    parse_device_class,
    parse_node,
    parse_slice,
)

__all__ = ["run_case", "build_cluster", "outcome_json"]


def _items(case: Mapping[str, Any], key: str) -> list[Any]:
    value = case.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidObject(f"{key}: must be a list")
    return value


def build_cluster(case: Mapping[str, Any]) -> tuple[Cluster, list[ResourceClaim]]:
    """Parse a case into a :class:`Cluster` and its claims; raises InvalidObject/FeatureError."""
    version = parse_version(case.get("kubernetesVersion"))
    features = parse_features(case.get("features"), version)
    nodes = [parse_node(raw, f"nodes[{index}]") for index, raw in enumerate(_items(case, "nodes"))]
    classes = {}
    for index, raw in enumerate(_items(case, "deviceClasses")):
        device_class = parse_device_class(raw, f"deviceClasses[{index}]")
        classes[device_class.name] = device_class
    slices = [
        parse_slice(raw, f"resourceSlices[{index}]")
        for index, raw in enumerate(_items(case, "resourceSlices"))
    ]
    allocated_results = []
    for index, raw in enumerate(_items(case, "allocatedClaims")):
        allocated_results.extend(parse_allocated_results(raw, f"allocatedClaims[{index}]"))
    claims = [
        parse_claim(raw, f"claims[{index}]") for index, raw in enumerate(_items(case, "claims"))
    ]
    allocated = AllocatedState.from_results(allocated_results, features.consumable_capacity)
    cluster = Cluster(features, classes, Inventory(slices), nodes, allocated)
    return cluster, claims


def outcome_json(name: Any, outcome: NodeOutcome, cluster: Cluster) -> dict[str, Any]:
    """The contract's output line for an outcome."""
    if outcome.error is not None:
        return {"name": name, "status": "error", "error": outcome.error}
    if outcome.allocations is None or outcome.node is None:
        return {"name": name, "status": "unsatisfiable"}
    return {
        "name": name,
        "status": "allocated",
        "node": outcome.node.name,
        "allocations": [
            allocation_result(allocation, outcome.node.name, cluster.features)
            for allocation in outcome.allocations
        ],
    }


def run_case(case: Any, timeout: float | None = DEFAULT_TIMEOUT_SECONDS) -> dict[str, Any]:
    """Run one case of the contract and return its output dict (never raises for bad input).

    ``timeout``: the allocation's wall-clock limit in seconds (None: none); past it the output
    is an ``error`` naming the limit.
    """
    if not isinstance(case, Mapping):
        return {"name": None, "status": "error", "error": "case: must be a JSON object"}
    name = case.get("name")
    try:
        cluster, claims = build_cluster(case)
        node_name = case.get("node")
        if node_name is not None and not isinstance(node_name, str):
            raise InvalidObject("node: must be a node name or null")
    except (InvalidObject, FeatureError) as error:
        return {"name": name, "status": "error", "error": str(error)}
    if not claims:
        # Nothing to place is a malformed request, not a cluster too small to satisfy it.
        return {"name": name, "status": "error", "error": "no claims to allocate"}
    outcome = cluster.allocate(claims, node_name, timeout)
    return outcome_json(name, outcome, cluster)
