"""The live preview of a claim request: what the form would ask for, checked against the
inventory as the user types (advice only; ``submit_request`` decides).

The checks, the quota verdict and "would it fit now?" are the API's dry run
(``claims.requests.fit.would_it_fit``, itself ``claims.requests.services.prepare`` plus
``index().place``), so the preview, the dry run and the submission never disagree about what is
wrong; the counts per node come from the warm index (one CEL evaluation per device shape, kept). A
device counts as free when its availability (``dra.allocator.availability``) is free, as on every
page; where free devices share counters, how many of them fit together is the fragmentation
advisor's count (``claims.capacity.fragmentation_reads.fits_together``). Nothing is recorded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User

from claims.capacity.fragmentation_reads import fits_together
from claims.capacity.index import index
from claims.lifecycle.manifest import manifest_document
from claims.models import ClaimRequest, ResourceClaim
from claims.requests.fit import would_it_fit
from claims.requests.specs import PRESETS, ClaimInput, SpecErrors, resolve_preset
from dra.cel import compile_selector
from dra.model import InvalidObject
from dra.quantity import QuantityError, parse_quantity
from toolkit.durations import format_duration

__all__ = [
    "STAGE_LABELS",
    "FunnelStage",
    "NodeRow",
    "Preview",
    "preset_availability",
    "preview",
    "to_yaml",
    "why_pending",
]

TOP_NODES = 5
# The explanation funnel's stages (dra.allocator.explain.STAGES), in words.
STAGE_LABELS = {
    "visible": "reachable from the node",
    "class": "of the device class",
    "selectors": "matching the selectors",
    "free": "not held by a claim",
    "capacity": "with counters and capacity left",
    "tolerated": "taints tolerated",
    "constraints": "meeting the constraints",
}


@dataclass(slots=True)
class FunnelStage:
    name: str
    label: str
    count: int
    is_blocking: bool


@dataclass(frozen=True, slots=True)
class NodeRow:
    """One node of the preview's table: devices matching, free (their availability, as every
    page counts them) and how many of those fit together (as many as are free unless they
    share counters; None: not counted yet)."""

    node: str
    matching: int
    free: int
    fit_together: int | None = None
    capped: bool = False


@dataclass(slots=True)
class Explanation:
    request: str
    node: str | None
    stages: list[FunnelStage]
    blocking_stage: str | None
    errors: list[str]


@dataclass(slots=True)
class Preview:
    """What the preview panel shows; ``errors`` maps form fields to messages."""

    errors: dict[str, list[str]] = field(default_factory=dict)
    device_class: str = ""
    matched: int | None = None  # devices of the class passing the selectors
    free: int | None = None  # of those, the free ones (dra.allocator.availability)
    # Where free devices share counters (MIG): how many of them the allocator gives out
    # together, one after another (None: as many as are free, or nothing matched).
    fit_together: int | None = None
    fit_capped: bool = False  # a node stopped counting at MAX_FITS and may take more
    fit_pending: int = 0  # nodes whose devices share counters, not counted yet (time budget)
    nodes: list[NodeRow] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    mode: str = ""
    held_devices: int = 0
    quota_problems: list[str] = field(default_factory=list)  # submitting would be refused
    approval_reasons: list[str] = field(default_factory=list)  # it would wait for approval
    lease_text: str = ""  # the lease it would get ("" when the input has errors)
    lease_is_default: bool = False  # it asks for none: claims.requests.services.default_lease
    fits: bool | None = None  # None: not checked (the input has errors)
    node: str | None = None
    devices: list[dict[str, str]] = field(default_factory=list)  # driver, pool, device
    placement_error: str | None = None
    explanations: list[Explanation] = field(default_factory=list)
    manifest: str = ""
    pod: str = ""

    @property
    def is_valid(self) -> bool:
        return not self.errors

    @property
    def fit_differs(self) -> bool:
        """Whether "how many fit together" is not "how many are free": the panel says both."""
        return self.fit_together is not None and (
            self.fit_together != self.free or bool(self.fit_pending)
        )


def to_yaml(document: Any) -> str:
    """YAML when PyYAML is installed (it is, through the dependencies), JSON otherwise."""
    try:
        import yaml
    except ImportError:  # pragma: no cover - PyYAML ships with the dependencies
        return json.dumps(document, indent=2)
    return str(yaml.safe_dump(document, sort_keys=False, default_flow_style=False))


def _manifests(
    user: User | AnonymousUser, claim: ClaimInput, spec: dict[str, Any], mode: str
) -> tuple[str, str]:
    """The ResourceClaim (or ResourceClaimTemplate) submitting it creates, as the apply would
    write it (``claims.lifecycle.manifest``), and a Pod using it, as YAML."""
    unrecorded = ClaimRequest(
        name=claim.name,
        namespace=claim.namespace,
        spec=spec,
        sharing=claim.sharing,
        mode=mode,
        requested_by=user if user.is_authenticated else None,
    )
    document = manifest_document(unrecorded, preview=True)
    if unrecorded.is_template:
        reference = {"name": "devices", "resourceClaimTemplateName": claim.name}
    else:
        reference = {"name": "devices", "resourceClaimName": claim.name}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{claim.name}-job"[:63], "namespace": claim.namespace},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04",
                    "command": ["nvidia-smi", "-L"],
                    "resources": {"claims": [{"name": "devices"}]},
                }
            ],
            "resourceClaims": [reference],
        },
    }
    return to_yaml(document), to_yaml(pod)


def _class_request(device_class: str, selectors: tuple[str, ...] = ()) -> Any:
    """The parsed request for a class and selectors, or None when the class is unknown or a
    selector does not compile."""
    if not device_class or any(compile_selector(s).error is not None for s in selectors):
        return None
    request = index().class_request(device_class, selectors)
    if request is None or device_class not in index().class_names():
        return None
    return request


def selector_hints(device_class: str, selectors: tuple[str, ...]) -> list[str]:
    """What the selectors read that the class's devices do not publish, and the values the
    capacities they read take (so ``memory >= 80Gi`` on 81559Mi devices explains itself)."""
    if not device_class or device_class not in index().class_names():
        return []
    attributes = index().class_published(device_class)
    capacities = index().class_capacities(device_class)
    hints: list[str] = []
    for expression in selectors:
        compiled = compile_selector(expression)
        if compiled.error is not None or compiled.reads is None:
            continue
        for path in sorted(compiled.reads.paths):
            if len(path) != 3:
                continue
            kind, domain, identifier = path
            qualified = f"{domain}/{identifier}"
            if kind == "attr" and qualified not in attributes:
                hints.append(
                    f"No device of class {device_class} publishes the attribute {qualified}."
                )
            elif kind == "cap" and qualified not in capacities:
                hints.append(
                    f"No device of class {device_class} publishes the capacity {qualified}."
                )
            elif kind == "cap":
                values = ", ".join(
                    f"{value}{_in_gib(value)} on {count} device{'s' if count != 1 else ''}"
                    for value, count in capacities[qualified].most_common(5)
                )
                hints.append(f"Devices of class {device_class} publish {identifier} {values}.")
    return list(dict.fromkeys(hints))


def _in_gib(value: str) -> str:
    """`` (79.6 GiB)`` for a quantity of a GiB or more (what a user compares with ``80Gi``)."""
    try:
        amount = parse_quantity(value).value
    except QuantityError:
        return ""
    return f" ({float(amount) / 2**30:.1f} GiB)" if amount >= 2**30 else ""


def preset_availability(device_class: str) -> dict[str, str]:
    """Per constraint preset: "" when the class's devices publish its attribute, else why it
    is unavailable."""
    if not device_class or device_class not in index().class_names():
        return dict.fromkeys(PRESETS, "Choose a device class first.")
    published = index().class_published(device_class)
    return {
        key: ""
        if resolve_preset(key, published) is not None
        else f"No device of class {device_class} publishes {' or '.join(names)}."
        for key, (_, names) in PRESETS.items()
    }


def _explanations(placement: Any) -> list[Explanation]:
    out = []
    for explanation in placement.explanations:
        blocking = explanation.blocking_stage
        out.append(
            Explanation(
                request=explanation.request,
                node=explanation.node,
                stages=[
                    FunnelStage(stage, label, explanation.counts.get(stage, 0), stage == blocking)
                    for stage, label in STAGE_LABELS.items()
                ],
                blocking_stage=blocking,
                errors=list(explanation.errors),
            )
        )
    return out


def explain_spec(namespace: str, name: str, spec: dict[str, Any]) -> tuple[Any, list[Explanation]]:
    """(placement, explanations) of a claim's spec against the inventory now."""
    claim = index().parse(namespace, name, spec)
    placement = index().place(claim)
    return placement, _explanations(placement)


def _count(result: Preview, claim: ClaimInput, request: Any) -> None:
    """Matching and free devices, in all and on the top nodes; where free devices share
    counters, how many of them fit together
    (``claims.capacity.fragmentation_reads.fits_together``)."""
    counts = index().node_counts(claim.device_class_name, request, TOP_NODES)
    result.matched, result.free = counts.matched, counts.free
    together = None
    if counts.sharing_counters:
        together = fits_together(claim.device_class_name, claim.selectors, counts.sharing_counters)
        counted = together.nodes
        result.fit_together = (
            counts.free
            - sum(counts.sharing_counters[node] for node in (*counted, *together.pending))
            + together.fits
        )
        result.fit_capped = together.capped
        result.fit_pending = len(together.pending)
    for node, matching, free in counts.nodes:
        fit = together.nodes.get(node) if together is not None else None
        if fit is not None:
            result.nodes.append(NodeRow(node, matching, free, fit.fits, fit.capped))
        elif node in counts.sharing_counters:  # not counted yet
            result.nodes.append(NodeRow(node, matching, free))
        else:
            result.nodes.append(NodeRow(node, matching, free, free))


def preview(user: User | AnonymousUser, claim: ClaimInput) -> Preview:
    """See the module docstring."""
    result = Preview(device_class=claim.device_class_name)
    report = None
    try:
        report = would_it_fit(user, claim, usage_max_age=settings.CLAIMS_PREVIEW_USAGE_SECONDS)
    except SpecErrors as error:
        result.errors = error.errors
    request = _class_request(claim.device_class_name, claim.selectors)
    if request is not None:
        _count(result, claim, request)
        result.hints = selector_hints(claim.device_class_name, claim.selectors)
    if report is None:
        return result
    result.mode = str(report.mode)
    result.held_devices = report.held_devices
    if report.refused_by_quota:
        result.quota_problems = report.quota.problems
    result.approval_reasons = report.approval_reasons
    result.lease_text = (
        format_duration(report.lease) if report.lease else "none (held until released)"
    )
    result.lease_is_default = claim.lease is None
    result.manifest, result.pod = _manifests(user, claim, report.spec, str(report.mode))
    placement = report.placement
    result.explanations = _explanations(placement)
    result.fits = report.allocatable
    result.node = placement.node
    result.placement_error = placement.error
    result.devices = [
        {"driver": r["driver"], "pool": r["pool"], "device": r["device"]} for r in report.devices
    ]
    return result


def why_pending(claim: ResourceClaim) -> dict[str, Any] | None:
    """For a claim that is not allocated: would the allocator place it now, and if not, the
    explanation funnel (advice from the portal's index; the scheduler decides)."""
    if claim.is_allocated or claim.is_deleting:
        return None
    try:
        placement, explanations = explain_spec(claim.namespace, claim.name, claim.spec)
    except InvalidObject as error:
        return {"fits": False, "node": None, "error": str(error), "explanations": [], "hints": []}
    hints: list[str] = []
    if placement.allocation is None:
        for request in index().parse(claim.namespace, claim.name, claim.spec).requests:
            options = [request.exactly] if request.exactly is not None else []
            for option in (*options, *request.first_available):
                selectors = tuple(s for s in option.selectors if s is not None)
                hints += selector_hints(option.device_class_name, selectors)
    return {
        "fits": placement.allocation is not None,
        "node": placement.node,
        "error": placement.error,
        "explanations": explanations,
        "funnels": [explanation.to_json() for explanation in placement.explanations],
        "hints": list(dict.fromkeys(hints)),
    }
