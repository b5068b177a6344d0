"""What the demo seeds once the mirror holds the cluster's classes, shared by ``manage.py demo``
and the tests that follow the README's journey on the same data.

* :func:`seed_class_policies`: whole H100s are reserved by the portal for the lease; MIG slices
  and the example driver's GPUs go to the (simulated) scheduler.
* :func:`seed_governance`: team-a's ResourceQuota backstop on, and the request the README's
  approvals paragraph promises: bob's 5-day request for 3 H100s, waiting for alice because
  team-a sends leases over 3 days to approval.

Both are idempotent across restarts (a policy an admin already set is kept; the request is
submitted once, by its idempotency key).
"""

from __future__ import annotations

import datetime as dt

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser

from claims.models import AllocationMode, ClaimRequest, ClassPolicy
from claims.requests.services import save_class_policy, submit_request
from claims.requests.specs import ClaimInput
from portal.models import Tenant
from portal.services.tenants import save_tenant

__all__ = [
    "DEMO_CLASS_POLICIES",
    "DEMO_PENDING",
    "DEMO_PENDING_KEY",
    "H100_SELECTOR",
    "seed_class_policies",
    "seed_governance",
]

# The demo cluster's class gpu.nvidia.com holds the DGX H100s' GPUs and the DGX A100's: the
# selector is what makes "3 H100s" three H100s (without it the allocator may take A100s, whose
# MIG partitions it would then block).
H100_SELECTOR = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"'

# A request beyond team-a's approval threshold (leases over 3 days): it waits for alice, and
# fits the quota, so she can approve it.
DEMO_PENDING = ClaimInput(
    namespace="gpu-test1",
    name="long-training",
    device_class_name="gpu.nvidia.com",
    count=3,
    selectors=(H100_SELECTOR,),
    lease=dt.timedelta(days=5),
)
DEMO_PENDING_KEY = "demo-pending-approval"

DEMO_CLASS_POLICIES = [
    ("gpu.nvidia.com", AllocationMode.RESERVATION),
    ("mig.nvidia.com", AllocationMode.SCHEDULER),
]


def seed_class_policies() -> None:
    """Both allocation modes in the demo (see the module docstring); a policy an admin already
    set is kept."""
    for device_class, mode in DEMO_CLASS_POLICIES:
        if not ClassPolicy.objects.filter(device_class_name=device_class).exists():
            save_class_policy(actor=AnonymousUser(), device_class_name=device_class, mode=mode)


def seed_governance() -> ClaimRequest | None:
    """Team-a's backstop on and bob's pending request (call once the mirror holds the device
    classes). Answers the request when this call submitted it, None when it existed already.
    Raises :class:`claims.requests.specs.SpecErrors` when the request is refused."""
    team_a = Tenant.objects.get(slug="team-a")
    if not team_a.resource_quota_backstop:
        save_tenant(actor=None, tenant=team_a, resource_quota_backstop=True)
    if ClaimRequest.objects.filter(idempotency_key=DEMO_PENDING_KEY).exists():
        return None
    bob = get_user_model().objects.get(username="bob")
    return submit_request(user=bob, claim=DEMO_PENDING, idempotency_key=DEMO_PENDING_KEY)
