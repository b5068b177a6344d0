"""ResourceQuota for ResourceClaims, as kube-apiserver's quota admission and kube-controller-
manager's quota controller do it (the parts a DRA portal meets).

What a claim uses (``pkg/quota/v1/evaluator/core/resource_claims.go``, ``Usage``): one
``count/resourceclaims.resource.k8s.io``, and per device class
``<class>.deviceclass.resource.k8s.io/devices``: for an ``exactly`` request its ``count``
(ExactCount, the default; count defaults to 1) or 32 for ``All`` (``AllocationResultsMaxSize``,
the worst case), for a ``firstAvailable`` request the largest of its subrequests per class
(worst case). Admin access is counted like any other request: upstream does not exempt it.
Requests of an unknown shape or mode count no devices.

Admission (``pkg/admission/plugin/resourcequota/controller.go``, ``checkRequest``): every
ResourceQuota of the namespace whose ``status.hard`` names one of those resources must have a
``status.used`` entry for it ("status unknown for quota"), and ``used + requested`` must stay
within ``hard`` for each resource the claim asks for; else 403 Forbidden
``resourceclaims.resource.k8s.io "<name>" is forbidden: exceeded quota: <quota>, requested:
<r>=<n>, used: <r>=<n>, limited: <r>=<n>`` (resources sorted, comma-separated). On success the
quotas' ``status.used`` go up before the claim is stored.

Simplifications: the quota controller's work is done at once, in the same lock as the write
that causes it: a new or changed ResourceQuota gets ``status.hard`` (a copy of ``spec.hard``)
and ``status.used`` immediately after it is stored (a second write, as the controller's), and a
deleted claim gives its usage back at once (the real controller replenishes within seconds).
Only ResourceClaims are evaluated: other resources in ``hard`` get no ``used`` entry, scopes are
not supported (a quota with scopes is treated as unscoped), and the DRAExtendedResource
quota names (``requests.deviceclass.resource.kubernetes.io/<class>``) are not counted. Updates
of a claim's spec cannot change its usage (the spec is immutable), so only creates are checked.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dra.quantity import Quantity, QuantityError, parse_quantity

from .errors import ApiError

__all__ = [
    "CLAIM_COUNT",
    "PER_CLASS_SUFFIX",
    "admission_error",
    "claim_usage",
    "computed_status",
    "is_claim_resource",
    "invalid_hard",
]

CLAIM_COUNT = "count/resourceclaims.resource.k8s.io"
PER_CLASS_SUFFIX = ".deviceclass.resource.k8s.io/devices"
ALLOCATION_RESULTS_MAX_SIZE = 32


def is_claim_resource(name: str) -> bool:
    """Whether the claim evaluator tracks this quota resource name (``MatchingResources``)."""
    return name == CLAIM_COUNT or name.endswith(PER_CLASS_SUFFIX)


def _devices(request: dict[str, Any]) -> int:
    mode = request.get("allocationMode") or "ExactCount"
    if mode == "ExactCount":
        count = request.get("count")
        return int(count) if isinstance(count, int) and not isinstance(count, bool) else 1
    if mode == "All":
        return ALLOCATION_RESULTS_MAX_SIZE
    return 0  # an unknown mode counts nothing, as upstream


def claim_usage(claim: dict[str, Any]) -> dict[str, int]:
    """What one ResourceClaim counts against quota, by quota resource name."""
    usage: dict[str, int] = {CLAIM_COUNT: 1}
    devices = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []
    for request in devices:
        if not isinstance(request, dict):
            continue
        alternatives = request.get("firstAvailable")
        if isinstance(alternatives, list) and alternatives:
            largest: dict[str, int] = {}
            for sub in alternatives:
                if isinstance(sub, dict):
                    name = f"{sub.get('deviceClassName') or ''}{PER_CLASS_SUFFIX}"
                    largest[name] = max(largest.get(name, 0), _devices(sub))
            for name, count in largest.items():
                usage[name] = usage.get(name, 0) + count
        elif isinstance(request.get("exactly"), dict):
            exactly = request["exactly"]
            name = f"{exactly.get('deviceClassName') or ''}{PER_CLASS_SUFFIX}"
            usage[name] = usage.get(name, 0) + _devices(exactly)
    return usage


def _quantity(text: Any) -> Quantity | None:
    try:
        return parse_quantity(str(text))
    except QuantityError:
        return None


def invalid_hard(name: str, obj: dict[str, Any]) -> ApiError | None:
    """A 422 for a ``spec.hard`` value that is not a quantity (or is negative), else None."""
    hard = (obj.get("spec") or {}).get("hard") or {}
    if not isinstance(hard, dict):
        return ApiError.invalid("ResourceQuota", name, "spec.hard: Invalid value: must be a map")
    for key, value in sorted(hard.items()):
        quantity = _quantity(value)
        if quantity is None:
            return ApiError.invalid(
                "ResourceQuota",
                name,
                f"spec.hard[{key}]: Invalid value: {str(value)!r}: quantities must match the "
                "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            )
        if quantity.sign() < 0:
            return ApiError.invalid(
                "ResourceQuota",
                name,
                f"spec.hard[{key}]: Invalid value: {str(value)!r}: must be greater than or "
                "equal to 0",
            )
    return None


def _format(value: Fraction) -> str:
    return str(Quantity(value))


def computed_status(quota: dict[str, Any], claims: list[dict[str, Any]]) -> dict[str, Any]:
    """The quota controller's ``status``: ``hard`` copied from the spec, ``used`` summed over
    the namespace's claims for the claim resources ``hard`` names."""
    hard = (quota.get("spec") or {}).get("hard") or {}
    status_hard = {}
    for key, value in hard.items():
        quantity = _quantity(value)
        status_hard[key] = str(quantity) if quantity is not None else str(value)
    used: dict[str, Fraction] = {key: Fraction(0) for key in hard if is_claim_resource(key)}
    for claim in claims:
        for key, count in claim_usage(claim).items():
            if key in used:
                used[key] += count
    return {"hard": status_hard, "used": {key: _format(value) for key, value in used.items()}}


def _pretty(values: dict[str, Fraction]) -> str:
    return ",".join(f"{key}={_format(values[key])}" for key in sorted(values))


def admission_error(
    claim_name: str, usage: dict[str, int], quotas: list[dict[str, Any]]
) -> tuple[ApiError | None, list[tuple[int, dict[str, str]]]]:
    """Check one new claim's ``usage`` against the namespace's ResourceQuotas (sorted by
    name). Returns the 403 to answer, or None and, per quota index that changes, its new
    ``status.used``."""
    updates: list[tuple[int, dict[str, str]]] = []
    for index, quota in enumerate(quotas):
        name = quota["metadata"]["name"]
        status = quota.get("status") or {}
        hard_text = status.get("hard") or {}
        used_text = status.get("used") or {}
        restricted = sorted(key for key in hard_text if is_claim_resource(key))
        if not restricted:
            continue
        unknown = [key for key in restricted if key not in used_text]
        if unknown:
            return _forbidden(
                claim_name,
                f"status unknown for quota: {name}, resources: {','.join(unknown)}",
            ), []
        hard = {
            key: (_quantity(hard_text[key]) or Quantity(Fraction(0))).value for key in restricted
        }
        used = {
            key: (_quantity(used_text[key]) or Quantity(Fraction(0))).value for key in restricted
        }
        requested = {key: Fraction(usage[key]) for key in restricted if usage.get(key)}
        if not requested:
            continue
        exceeded = sorted(key for key in requested if used[key] + requested[key] > hard[key])
        if exceeded:
            message = (
                f"exceeded quota: {name}, "
                f"requested: {_pretty({k: requested[k] for k in exceeded})}, "
                f"used: {_pretty({k: used[k] for k in exceeded})}, "
                f"limited: {_pretty({k: hard[k] for k in exceeded})}"
            )
            return _forbidden(claim_name, message), []
        new_used = {key: str(value) for key, value in used_text.items()}
        for key, value in requested.items():
            new_used[key] = _format(used[key] + value)
        updates.append((index, new_used))
    return None, updates


def _forbidden(claim_name: str, why: str) -> ApiError:
    return ApiError(
        403,
        "Forbidden",
        f'resourceclaims.resource.k8s.io "{claim_name}" is forbidden: {why}',
        {"name": claim_name, "group": "resource.k8s.io", "kind": "resourceclaims"},
    )
