"""Signals of the claims domain, and its receivers of the tenancy domain's signals.

``request_state_changed``: sent (sender ``ClaimRequest``; ``request``, ``before``, ``after``,
``reason``, ``actor``) by ``claims.lifecycle.transitions.transition`` inside the transaction
that moved the request. Receivers that act outside the database (notifications) do so on commit.

``approval_requested``: sent (sender ``ClaimRequest``; ``request``, ``renewal``) inside the
transaction that recorded something waiting for approval: a request pending approval
(``renewal=False``, by ``claims.requests.services.submit_request``) or a renewal of its lease
(``renewal=True``, by ``claims.requests.services.renew_request``). ``renewal_decided``: sent (sender
``ClaimRequest``; ``request``, ``approved``, ``lease``, ``comment``, ``actor``) by
``claims.requests.approvals`` when a renewal waiting for approval is approved or denied.

``claims_flagged_idle``: sent (sender ``ClaimIdleness``; ``claim_ids``) by the idle sweep
(``claims.usage.idle``) inside its transaction, for idle claims whose owners were not yet told of
the current idle episode. ``claim_reclaimed``: sent (sender ``ClaimIdleness``; ``claim_id``,
``namespace``, ``name``, ``tenant_id``, ``owner_id``, ``reason``) when the portal deleted an idle
claim. Receivers act on commit.

``claim_moved``: sent (sender ``ClaimRequest``; ``request``, ``before``, ``after``: the devices
as ``[driver, pool, device]`` lists and the node) when the cluster holds other devices for a
reservation than the portal wrote and the request followed the cluster (``mirror.following``).
``tenant_usage_changed``: sent (``tenant_ids``) when mirrored claims of those tenants changed, so
their usage may have crossed a line (the quota-high alarm). Receivers act on commit.

``request_applied``: sent (sender ``ClaimRequest``; ``request``) by ``claims.lifecycle.apply``
once a request's claim is written: the mirror may have shown the claim (even a pod using it)
before, so its follower looks at it at once (``mirror.following``).

``relink_claim_tenants`` keeps ``ResourceClaim.tenant`` in step with namespace ownership.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.dispatch import Signal, receiver

from claims.models import AllocatedDevice, ResourceClaim, UsageCounter, difference, summed
from devices.locks import lock_device_writes
from portal.models import TenantNamespace
from portal.signals import namespaces_changed

__all__ = [
    "approval_requested",
    "claim_moved",
    "claim_reclaimed",
    "claims_flagged_idle",
    "relink_claim_tenants",
    "renewal_decided",
    "request_applied",
    "request_state_changed",
    "tenant_usage_changed",
]

request_state_changed = Signal()
approval_requested = Signal()
renewal_decided = Signal()
claims_flagged_idle = Signal()
claim_reclaimed = Signal()
claim_moved = Signal()
request_applied = Signal()
tenant_usage_changed = Signal()


@receiver(namespaces_changed, dispatch_uid="claims.relink_claim_tenants")
def relink_claim_tenants(sender: Any, names: Iterable[str], **kwargs: Any) -> int:
    """Points the claims in ``names`` at the tenant now owning their namespace (or none)."""
    owner = TenantNamespace.objects.filter(name=OuterRef("namespace")).values("tenant_id")[:1]
    claims = ResourceClaim.objects.filter(namespace__in=list(names))
    results = AllocatedDevice.objects.filter(claim__in=claims)
    # What they count moves from the tenant that had them to the one that has them now.
    with transaction.atomic():
        lock_device_writes()
        counted = summed(results)
        moved = claims.update(tenant=Subquery(owner))
        UsageCounter.objects.add(difference(summed(results), counted))
    return moved
