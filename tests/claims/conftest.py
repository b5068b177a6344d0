"""Claims tests use the ``live`` fixture of ``tests/conftest.py`` (emulator + mirror), or
``inventory`` (the mirrored demo cluster behind a fresh allocation index); the helpers below
are shared by the approval tests."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from claims.capacity.index import reset_index
from claims.models import ClaimRequest
from portal.models import Quota


@pytest.fixture
def inventory(mirrored_cluster):
    reset_index()
    yield
    reset_index()


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


def make_held(user, tenant):
    """``user``'s 2-hour claim, applied at once (made directly: no cluster); ``tenant`` sends
    leases over 3 days to approval, its longest is 7 days."""
    policy(tenant, max_lease=timedelta(days=7), approve_above_lease=timedelta(days=3))
    return ClaimRequest.objects.create(
        tenant=tenant,
        namespace="gpu-test1",
        name="short-run",
        device_class_name="gpu.nvidia.com",
        mode="reservation",
        form={"count": 1},
        spec={"devices": {"requests": []}},
        state=ClaimRequest.State.APPLIED,
        held_devices=1,
        requested_by=user,
        lease=timedelta(hours=2),
        expires_at=timezone.now() + timedelta(hours=2),
    )


@pytest.fixture
def held(bob, team_a):
    """bob's 2-hour claim in team-a (``make_held``)."""
    return make_held(bob, team_a)
