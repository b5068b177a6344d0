"""Why a claim cannot be allocated, and which devices a selector matches (selector preview).

The explanation is a funnel per request (or subrequest): how many devices the node(s) can see,
how many pass the class selectors, then the request selectors, then are free, then have
enough counters/capacity, then are tolerated, then could also satisfy the claim's constraints
when taken alone. The node with the largest last non-zero stage is reported as the one that
came closest. It is advice for people, computed independently of the search; the search's
verdict stays authoritative.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from dra.allocator.availability import counters_blocking
from dra.allocator.cluster import Cluster
from dra.allocator.contract import build_cluster
from dra.allocator.pools import gather_pools
from dra.allocator.search import Candidate, request_capacity_fits
from dra.cel import CelCompileError, CelRuntimeError, compile_selector
from dra.model import ExactRequest, InvalidObject, Node, ResourceClaim

__all__ = [
    "RequestExplanation",
    "SelectorPreview",
    "explain_case",
    "explain_claims",
    "preview_selector",
]

STAGES = ("visible", "class", "selectors", "free", "capacity", "tolerated", "constraints")


@dataclass(slots=True)
class RequestExplanation:
    """Device counts per stage for one (sub)request on its closest node."""

    claim: str
    request: str
    node: str | None
    counts: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def blocking_stage(self) -> str | None:
        """The first stage left with no devices (None when every stage kept some)."""
        for stage in STAGES:
            if self.counts.get(stage, 0) == 0:
                return stage
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "request": self.request,
            "node": self.node,
            "counts": {stage: self.counts.get(stage, 0) for stage in STAGES},
            "blockingStage": self.blocking_stage,
            "errors": self.errors,
        }


def _funnel(
    cluster: Cluster, node: Node, claim: ResourceClaim, request: ExactRequest, name: str
) -> RequestExplanation:
    case = cluster.case()
    explanation = RequestExplanation(claim.key, name, node.name)
    counts = dict.fromkeys(STAGES, 0)
    device_class = cluster.classes.get(request.device_class_name)
    if device_class is None:
        explanation.errors.append(f"device class {request.device_class_name} not found")
    for pool in gather_pools(cluster.inventory, node, cluster.features):
        for resource_slice in pool.slices:
            for device in resource_slice.devices:
                counts["visible"] += 1
                view = case.input_for(resource_slice, device)
                try:
                    if device_class is None or not all(
                        compile_selector(expression).matches(view)
                        for expression in device_class.selectors
                        if expression is not None
                    ):
                        continue
                    counts["class"] += 1
                    if not all(
                        compile_selector(expression).matches(view)
                        for expression in request.selectors
                        if expression is not None
                    ):
                        continue
                except (CelCompileError, CelRuntimeError) as error:
                    if len(explanation.errors) < 5:
                        explanation.errors.append(f"device {pool.id}/{device.name}: {error}")
                    continue
                counts["selectors"] += 1
                key = (pool.driver, pool.name, device.name)
                if not request.admin_access and key in cluster.allocated.in_use:
                    continue
                counts["free"] += 1
                candidate = Candidate(pool, resource_slice, device)
                if (
                    cluster.features.consumable_capacity
                    and request_capacity_fits(
                        request, candidate, cluster.allocated.consumed.get(key, {}), {}
                    )
                    is None
                ):
                    continue
                if (
                    device.consumes_counters
                    and counters_blocking(pool, resource_slice, device, cluster.allocated)
                    is not None
                ):
                    continue
                counts["capacity"] += 1
                if cluster.features.device_taints and any(
                    not any(toleration.tolerates(taint) for toleration in request.tolerations)
                    for taint in device.taints
                    if taint.effect in ("NoSchedule", "NoExecute")
                ):
                    continue
                counts["tolerated"] += 1
                if all(
                    device.attribute(attribute, pool.driver) is not None
                    for constraint in claim.constraints
                    if constraint.applies_to(name.split("/")[0], name.partition("/")[2] or None)
                    for attribute in (constraint.match_attribute or constraint.distinct_attribute,)
                    if attribute
                ):
                    counts["constraints"] += 1
    explanation.counts = counts
    return explanation


def _progress(explanation: RequestExplanation) -> tuple[int, int]:
    reached = 0
    for index, stage in enumerate(STAGES):
        if explanation.counts.get(stage, 0) > 0:
            reached = index + 1
    last = explanation.counts.get(STAGES[reached - 1], 0) if reached else 0
    return reached, last


def explain_case(case: Mapping[str, Any]) -> list[RequestExplanation]:
    """One explanation per (sub)request of every claim, on the given or the closest node."""
    try:
        cluster, claims = build_cluster(case)
    except (InvalidObject, ValueError) as error:
        return [RequestExplanation("", "", None, errors=[str(error)])]
    return explain_claims(cluster, claims, case.get("node"))


def explain_claims(
    cluster: Cluster,
    claims: list[ResourceClaim],
    node_name: str | None = None,
    *,
    among: Collection[str] | None = None,
) -> list[RequestExplanation]:
    """:func:`explain_case` on a long-lived cluster (the portal's warm index). ``among``: only
    look at these nodes (a large cluster's likeliest ones), instead of every node."""
    nodes = [
        node
        for node in cluster.nodes
        if (node_name is None or node.name == node_name) and (among is None or node.name in among)
    ]
    explanations = []
    for claim in claims:
        for request in claim.requests:
            alternatives = (
                [(request.exactly, request.name)]
                if request.exactly is not None
                else [(sub, f"{request.name}/{sub.name}") for sub in request.first_available]
            )
            for alternative, name in alternatives:
                best: RequestExplanation | None = None
                for node in nodes:
                    explanation = _funnel(cluster, node, claim, alternative, name)
                    if best is None or _progress(explanation) > _progress(best):
                        best = explanation
                explanations.append(best or RequestExplanation(claim.key, name, None))
    return explanations


@dataclass(slots=True)
class SelectorPreview:
    """Devices matched by a selector; ``error`` is a compile error, ``errors`` runtime ones."""

    matched: list[str]
    unmatched: int
    error: str | None = None
    errors: list[str] = field(default_factory=list)


def preview_selector(expression: str, case: Mapping[str, Any]) -> SelectorPreview:
    """Evaluate one CEL selector against every device of the case's slices."""
    selector = compile_selector(expression)
    if selector.error is not None:
        return SelectorPreview([], 0, str(selector.error))
    cluster, _ = build_cluster(case)
    preview = SelectorPreview([], 0)
    inputs = cluster.case()
    for resource_slice, device in cluster.inventory.devices:
        label = f"{resource_slice.driver}/{resource_slice.pool_name}/{device.name}"
        try:
            if selector.matches(inputs.input_for(resource_slice, device)):
                preview.matched.append(label)
            else:
                preview.unmatched += 1
        except CelRuntimeError as error:
            preview.errors.append(f"{label}: {error}")
    return preview
