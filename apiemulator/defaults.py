"""The defaults kube-apiserver fills into the DRA kinds as it decodes a create or an update
(``pkg/apis/resource/v1``'s defaulting): what a client reads back carries them.

* a device request (``exactly``) and each ``firstAvailable`` subrequest: ``allocationMode``
  ``ExactCount``, and then ``count`` 1 when absent or 0;
* a request's tolerations: ``operator`` ``Equal``;

in a ResourceClaim's ``spec`` and a ResourceClaimTemplate's ``spec.spec``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["apply_defaults"]


def _default_request(request: Any) -> None:
    if not isinstance(request, dict):
        return
    if not request.get("allocationMode"):
        request["allocationMode"] = "ExactCount"
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1
    for toleration in request.get("tolerations") or []:
        if isinstance(toleration, dict) and not toleration.get("operator"):
            toleration["operator"] = "Equal"


def _default_claim_spec(spec: Any) -> None:
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for request in requests if isinstance(requests, list) else []:
        if not isinstance(request, dict):
            continue
        if isinstance(request.get("exactly"), dict):
            _default_request(request["exactly"])
        for subrequest in request.get("firstAvailable") or []:
            _default_request(subrequest)


def apply_defaults(kind: str, obj: dict[str, Any]) -> None:
    """Fills in the defaults of ``obj`` (of ``kind``) in place; other kinds are left as they are.
    Malformed parts are left for validation to refuse."""
    if kind == "ResourceClaim":
        _default_claim_spec(obj.get("spec"))
    elif kind == "ResourceClaimTemplate":
        spec = obj.get("spec")
        if isinstance(spec, dict):
            _default_claim_spec(spec.get("spec"))
