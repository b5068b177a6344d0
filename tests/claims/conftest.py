"""Claims tests use the ``live`` fixture of ``tests/conftest.py`` (emulator + mirror); the
helpers below are shared by the approval tests."""

from __future__ import annotations

from datetime import timedelta

from claims.models import ClaimRequest
from portal.models import Quota


def policy(tenant, **fields):
    """Sets approval fields on the tenant's gpu.nvidia.com quota."""
    Quota.objects.filter(tenant=tenant, device_class_name="gpu.nvidia.com").update(**fields)


def make_pending(
    user,
    tenant,
    name="big-run",
    namespace="gpu-test1",
    devices=2,
    lease=timedelta(days=2),
    **fields,
):
    """A request waiting for approval, made directly (no cluster, no quota check)."""
    return ClaimRequest.objects.create(
        tenant=tenant,
        namespace=namespace,
        name=name,
        device_class_name="gpu.nvidia.com",
        mode="scheduler",
        form={"count": devices},
        spec={"devices": {"requests": []}},
        state=ClaimRequest.State.PENDING_APPROVAL,
        held_devices=devices,
        requested_by=user,
        lease=lease,
        approval_reasons=[f"{devices} devices of gpu.nvidia.com: more than 1 needs approval."],
        **fields,
    )
