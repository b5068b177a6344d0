"""Quota under concurrency, on PostgreSQL: the tenant's row lock makes check and reservation
one step, so simultaneous requests — or approvals racing for the last room — can never exceed
a quota."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import pytest
from django.db import connection

from claims.models import ClaimRequest, ClassPolicy
from claims.requests.approvals import approve_request
from claims.requests.quota import tenant_usage
from claims.requests.services import QuotaExceeded, submit_request
from claims.requests.specs import ClaimInput, SpecErrors
from kube.kinds import Kind
from portal.models import Quota
from tests.factories import TenantFactory, TenantNamespaceFactory

pytestmark = pytest.mark.django_db(transaction=True)
GIB = 2**30


@pytest.fixture
def race_tenant(live, bob):
    """A tenant with one empty namespace (in the cluster too) and bob as a member."""
    _, cluster, resync = live
    cluster.create(Kind.NAMESPACES, {"metadata": {"name": "race"}})
    resync()
    tenant = TenantFactory(name="Race", slug="race")
    TenantNamespaceFactory(tenant=tenant, name="race")
    tenant.memberships.create(user=bob, role="member")
    return tenant


def _race(act: Callable[[object], object], items: list, won: str) -> Counter:
    """Runs ``act`` on every item at once, one thread each; counts the outcomes."""
    outcomes: Counter = Counter()
    barrier = threading.Barrier(len(items))
    lock = threading.Lock()

    def run(item: object) -> None:
        barrier.wait()
        try:
            act(item)
            outcome = won
        except QuotaExceeded:
            outcome = "over quota"
        except SpecErrors as error:
            outcome = f"error: {error}"
        finally:
            connection.close()
        with lock:
            outcomes[outcome] += 1

    threads = [threading.Thread(target=run, args=(item,)) for item in items]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def _submit_all(user, claims: list[ClaimInput]) -> Counter:
    return _race(lambda claim: submit_request(user=user, claim=claim), claims, "granted")


def test_fifty_simultaneous_requests_against_a_quota_of_eight_grant_exactly_eight(
    postgres, race_tenant, bob
):
    Quota.objects.create(tenant=race_tenant, device_class_name="gpu.nvidia.com", max_devices=8)
    claims = [
        ClaimInput(namespace="race", name=f"race-{i}", device_class_name="gpu.nvidia.com")
        for i in range(50)
    ]
    outcomes = _submit_all(bob, claims)
    assert outcomes == Counter({"granted": 8, "over quota": 42})
    assert ClaimRequest.objects.filter(tenant=race_tenant).count() == 8
    assert tenant_usage(race_tenant)["gpu.nvidia.com"].total_devices == 8


def test_fifty_simultaneous_requests_never_exceed_a_device_memory_quota(postgres, race_tenant, bob):
    # The H100s publish 81559Mi each: 4 of them fit in 320Gi, a fifth does not.
    Quota.objects.create(
        tenant=race_tenant, device_class_name="gpu.nvidia.com", max_device_memory=320 * GIB
    )
    claims = [
        ClaimInput(
            namespace="race",
            name=f"mem-{i}",
            device_class_name="gpu.nvidia.com",
            selectors=(
                "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')",
            ),
        )
        for i in range(50)
    ]
    outcomes = _submit_all(bob, claims)
    assert outcomes == Counter({"granted": 4, "over quota": 46})
    assert tenant_usage(race_tenant)["gpu.nvidia.com"].total_memory_bytes <= 320 * GIB


def test_two_reservations_racing_for_the_last_free_device_one_wins_the_other_is_told_why(
    postgres, race_tenant, bob
):
    ClassPolicy.objects.create(device_class_name="gpu.example.com", mode="reservation")
    Quota.objects.create(tenant=race_tenant, device_class_name="gpu.example.com", max_devices=8)
    only = "device.attributes['gpu.example.com'].index == 7"
    claims = [
        ClaimInput(
            namespace="race",
            name=f"last-{i}",
            device_class_name="gpu.example.com",
            selectors=(only,),
        )
        for i in range(2)
    ]
    outcomes = _submit_all(bob, claims)
    assert outcomes == Counter({"granted": 2})  # both accepted by the quota...
    states = Counter(
        ClaimRequest.objects.filter(tenant=race_tenant).values_list("state", flat=True)
    )
    assert states == Counter({"applied": 1, "failed": 1})  # ...one device, one winner
    loser = ClaimRequest.objects.get(tenant=race_tenant, state="failed")
    assert "No devices fit now" in loser.reason
    assert "free" in loser.reason


def test_two_approvals_that_each_fit_alone_but_not_together_one_wins(
    postgres, race_tenant, bob, root
):
    race_tenant.requires_approval = True
    race_tenant.save()
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
    assert {request.state for request in requests} == {ClaimRequest.State.PENDING_APPROVAL}
    outcomes = _race(
        lambda request: approve_request(user=root, request=request), requests, "approved"
    )
    assert outcomes == Counter({"approved": 1, "over quota": 1})
    states = Counter(
        ClaimRequest.objects.filter(tenant=race_tenant).values_list("state", flat=True)
    )
    assert states == Counter(
        {ClaimRequest.State.APPLIED: 1, ClaimRequest.State.PENDING_APPROVAL: 1}
    )
    assert tenant_usage(race_tenant)["gpu.nvidia.com"].total_devices == 5
