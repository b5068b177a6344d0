"""Would it fit? A dry run of a submission that records nothing.

Runs every check :func:`claims.requests.services.submit_request` runs before it takes the tenant's
lock (``prepare``: input, namespace, classes, admin access, mode), the lease against the quota's
maximum, the allocation on this process's warm index, the quota check and the approval policy
(``claims.requests.approvals``: whether it would wait for approval, and why). Advice only: the
quota is read without the tenant's row lock and the index is the web process's own, so a
submission a moment later may still be refused (docs/claims.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AnonymousUser, User

from claims.capacity.index import Placement, index
from claims.requests.quota import QuotaCheck, approval_reasons, check_quota
from claims.requests.services import lease_for, prepare
from claims.requests.specs import ClaimInput
from portal.models import TenantNamespace

__all__ = ["FitReport", "would_it_fit"]


@dataclass(slots=True)
class FitReport:
    """What submitting ``claim`` now would meet: where it would be allocated (or the funnel
    of why not) and the quota's verdict."""

    namespace: TenantNamespace
    spec: dict[str, Any]
    mode: str
    lease: timedelta | None
    held_devices: int
    held_memory_bytes: int
    placement: Placement
    quota: QuotaCheck
    admin_access: bool = False
    # Why submitting it would wait for approval (empty: it would not).
    approval_reasons: list[str] = field(default_factory=list)

    @property
    def allocatable(self) -> bool:
        return self.placement.allocation is not None

    @property
    def fits(self) -> bool:
        """Allocatable now and within the quota (admin access is outside the quota)."""
        return self.allocatable and (self.quota.fits or self.admin_access)

    @property
    def needs_approval(self) -> bool:
        return bool(self.approval_reasons)

    @property
    def refused_by_quota(self) -> bool:
        """Submitting it would be refused as over quota (not sent for approval instead)."""
        return self.quota.refuses(admin_access=self.admin_access)

    @property
    def devices(self) -> list[dict[str, Any]]:
        """The allocation results it would get (``status.allocation.devices.results``)."""
        return list(((self.placement.allocation or {}).get("devices") or {}).get("results") or [])


def would_it_fit(
    user: User | AnonymousUser, claim: ClaimInput, *, usage_max_age: float = 0
) -> FitReport:
    """The dry run of ``submit_request(user=user, claim=claim)``. Raises
    :class:`claims.requests.specs.SpecErrors` for what submitting would refuse as invalid; over
    quota is not an error here but ``report.quota.problems``. ``usage_max_age``: the live preview
    may count the tenant's usage from a result that many seconds old."""
    namespace, spec, mode, devices, memory = prepare(user, claim)
    lease = lease_for(namespace.tenant, claim)
    placement = index().place(index().parse(claim.namespace, claim.name, spec))
    check = check_quota(
        namespace.tenant,
        claim.device_class_name,
        devices=devices,
        memory_bytes=memory,
        max_age=usage_max_age,
    )
    return FitReport(
        namespace=namespace,
        spec=spec,
        mode=mode,
        lease=lease,
        held_devices=devices,
        held_memory_bytes=memory,
        placement=placement,
        quota=check,
        admin_access=claim.admin_access,
        approval_reasons=[]
        if claim.admin_access
        else approval_reasons(
            namespace.tenant, check, devices=devices, memory_bytes=memory, lease=lease
        ),
    )
