"""Claims tests use the ``live`` fixture of ``tests/conftest.py`` (emulator + mirror), or
``inventory`` (the mirrored demo cluster behind a fresh allocation index); the helpers below
are shared by the approval tests."""

from __future__ import annotations

from datetime import timedelta

import pytest

from claims.index import reset_index
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


def make_pending(user, tenant, name="big-run", namespace="gpu-test1", devices=2, **fields):
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
        lease=timedelta(days=2),
        approval_reasons=[f"{devices} devices of gpu.nvidia.com: more than 1 needs approval."],
        **fields,
    )
