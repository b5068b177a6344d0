"""Approvals under concurrency, on PostgreSQL: approving re-checks the quota under the
tenant's row lock, so two approvals racing for the last room can never both win."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection

from claims.approvals import approve_request
from claims.models import ClaimRequest
from claims.quota import tenant_usage
from claims.services import QuotaExceeded, submit_request
from claims.specs import ClaimInput, SpecErrors
from mirror.cluster import Kind
from portal.models import Quota
from tests.factories import TenantFactory, TenantNamespaceFactory

pytestmark = pytest.mark.django_db(transaction=True)
State = ClaimRequest.State


@pytest.fixture
def race_tenant(live, bob):
    """A tenant with one empty namespace (in the cluster too) whose every request waits for
    approval, and bob as a member."""
    _, cluster, resync = live
    cluster.create(Kind.NAMESPACES, {"metadata": {"name": "race"}})
    resync()
    tenant = TenantFactory(name="Race", slug="race", requires_approval=True)
    TenantNamespaceFactory(tenant=tenant, name="race")
    tenant.memberships.create(user=bob, role="member")
    return tenant


def _approve_all(user, requests: list[ClaimRequest]) -> Counter:
    outcomes: Counter = Counter()
    barrier = threading.Barrier(len(requests))
    lock = threading.Lock()

    def run(request: ClaimRequest) -> None:
        barrier.wait()
        try:
            approve_request(user=user, request=request)
            outcome = "approved"
        except QuotaExceeded:
            outcome = "over quota"
        except SpecErrors as error:
            outcome = f"error: {error}"
        finally:
            connection.close()
        with lock:
            outcomes[outcome] += 1

    threads = [threading.Thread(target=run, args=(request,)) for request in requests]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_two_approvals_that_each_fit_alone_but_not_together_one_wins(
    postgres, race_tenant, bob, root
):
    Quota.objects.create(tenant=race_tenant, device_class_name="gpu.nvidia.com", max_devices=8)
    requests = [
        submit_request(
            user=bob,
            claim=ClaimInput(
                namespace="race", name=f"five-{i}", device_class_name="gpu.nvidia.com", count=5
            ),
        )
        for i in range(2)
    ]
    assert {request.state for request in requests} == {State.PENDING_APPROVAL}
    outcomes = _approve_all(root, requests)
    assert outcomes == Counter({"approved": 1, "over quota": 1})
    states = Counter(
        ClaimRequest.objects.filter(tenant=race_tenant).values_list("state", flat=True)
    )
    assert states == Counter({State.APPLIED: 1, State.PENDING_APPROVAL: 1})
    assert tenant_usage(race_tenant)["gpu.nvidia.com"].total_devices == 5
