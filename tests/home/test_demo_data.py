"""The demo's seeded request is what the README promises: bob's 5-day request for 3 H100s,
waiting for alice (team-a sends leases over 3 days to approval); approved, it holds 3 H100s."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from claims.models import ClaimRequest
from claims.requests.approvals import approve_request
from claims.requests.quota import format_gib
from claims.requests.services import submit_request
from claims.requests.specs import ClaimInput
from demo.data import H100_SELECTOR, seed_governance
from portal.models import Tenant

pytestmark = pytest.mark.django_db(transaction=True)
State = ClaimRequest.State


def test_bobs_request_asks_for_three_h100s_for_five_days_and_waits_for_alice(live, demo_seeded):
    request = seed_governance()
    assert request is not None
    assert (request.requested_by.username, request.namespace) == ("bob", "gpu-test1")
    assert request.state == State.PENDING_APPROVAL
    assert request.count_label == "3"
    assert request.approval_reasons == ["A lease of 5d: leases longer than 3d need approval."]
    assert format_gib(request.held_memory_bytes) == "238.9 GiB"  # 3 × 81559Mi
    assert Tenant.objects.get(slug="team-a").resource_quota_backstop
    assert seed_governance() is None  # idempotent across restarts


def test_approved_it_holds_three_h100s_and_no_a100(live, demo_seeded):
    request = seed_governance()
    assert request is not None
    approve_request(user=get_user_model().objects.get(username="alice"), request=request)
    request.refresh_from_db()
    assert request.state == State.APPLIED, request.reason
    results = request.allocation["devices"]["results"]
    assert len(results) == 3
    assert {result["pool"].split("-")[1] for result in results} == {"h100"}, results
    assert request.node_name.startswith("dgx-h100-")


def test_after_bob_tries_a_claim_as_the_readme_says_alice_can_still_approve_it(live, demo_seeded):
    request = seed_governance()
    assert request is not None
    bob = get_user_model().objects.get(username="bob")
    tried = submit_request(
        user=bob,
        claim=ClaimInput(
            namespace="gpu-test1",
            name="my-h100",
            device_class_name="gpu.nvidia.com",
            count=1,
            selectors=(H100_SELECTOR,),
        ),
    )
    tried.refresh_from_db()
    assert tried.state == State.APPLIED, tried.reason
    approve_request(user=get_user_model().objects.get(username="alice"), request=request)
    request.refresh_from_db()
    assert request.state == State.APPLIED, request.reason
