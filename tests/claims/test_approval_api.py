"""Approvals in the API: a request that waits is answered 202; approve and deny with the same
gates as the pages (another tenant's request 404, members 403, anonymous 401/403)."""

from __future__ import annotations

import pytest

from claims.models import ClaimRequest
from tests.claims.conftest import make_pending, policy

pytestmark = pytest.mark.django_db
State = ClaimRequest.State
REQUESTS = "/api/v1/claim-requests/"
TWO_GPUS = {
    "namespace": "gpu-test1",
    "name": "two-gpus",
    "device_class": "gpu.nvidia.com",
    "count": 2,
    "lease": "P2D",
}


def decide(client, request, verb, **body):
    return client.post(f"{REQUESTS}{request.pk}/{verb}/", body, format="json")


def test_a_request_that_needs_approval_is_answered_202_and_says_why(live, api_as, bob, team_a):
    policy(team_a, approve_above_devices=1)
    response = api_as(bob).post(REQUESTS, TWO_GPUS, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["state"] == "pending_approval"
    assert body["approval_reasons"] == ["2 devices of gpu.nvidia.com: more than 1 needs approval."]
    assert body["lease"] == "P2D"
    assert body["expires_at"] is None
    assert (body["decided_by"], body["decided_at"], body["decision_comment"]) == (None, None, "")


def test_the_dry_run_says_whether_it_would_wait(live, api_as, bob, team_a):
    policy(team_a, max_devices=1, approve_over_quota=True)
    body = api_as(bob).post(f"{REQUESTS}would-it-fit/", TWO_GPUS, format="json").json()
    assert body["needs_approval"] is True
    assert body["approval_reasons"][0].startswith("Over quota:")


def test_the_list_filters_pending_requests(api_as, alice, bob, team_a):
    pending = make_pending(bob, team_a)
    ClaimRequest.objects.create(
        tenant=team_a,
        namespace="gpu-test1",
        name="running",
        device_class_name="gpu.nvidia.com",
        mode="scheduler",
        spec={},
        state=State.APPLIED,
    )
    body = api_as(alice).get(REQUESTS, {"state": "pending_approval"}).json()
    assert [item["id"] for item in body["results"]] == [str(pending.pk)]


def test_a_tenant_admin_approves_and_the_decision_is_in_the_answer(api_as, alice, bob, team_a):
    pending = make_pending(bob, team_a)
    response = decide(api_as(alice), pending, "approve", comment="ok for two days")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["state"] == "submitted"
    assert body["decided_by"] == "alice"
    assert body["decision_comment"] == "ok for two days"
    assert body["decided_at"] is not None and body["expires_at"] is not None
    # Approving again is a no-op that answers the request.
    assert decide(api_as(alice), pending, "approve").status_code == 200


def test_a_deny_needs_a_comment_and_ends_the_request(api_as, alice, bob, team_a):
    pending = make_pending(bob, team_a)
    refused = decide(api_as(alice), pending, "deny")
    assert refused.status_code == 400
    assert "comment" in refused.json()["error"]["fields"]
    body = decide(api_as(alice), pending, "deny", comment="use the A100s").json()
    assert (body["state"], body["decided_by"], body["reason"]) == (
        "denied",
        "alice",
        "denied: use the A100s",
    )
    conflict = decide(api_as(alice), pending, "approve")
    assert conflict.status_code == 409
    assert conflict.json()["error"]["code"] == "conflict"


def test_an_approval_over_the_quota_is_a_409_and_the_request_stays_pending(
    api_as, alice, bob, team_a
):
    pending = make_pending(bob, team_a, devices=9)
    response = decide(api_as(alice), pending, "approve")
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "quota_exceeded"
    assert "raise the quota" in error["message"]
    assert error["details"]["quota"]["limit"]["max_devices"] == 8
    pending.refresh_from_db()
    assert pending.state == State.PENDING_APPROVAL


def test_another_tenants_request_is_a_404_and_a_member_gets_a_403(
    api_as, alice, bob, carol, team_a, team_b
):
    theirs = make_pending(carol, team_b, namespace="team-b-prod")
    assert decide(api_as(alice), theirs, "approve").status_code == 404
    assert decide(api_as(alice), theirs, "deny", comment="no").status_code == 404
    alices = make_pending(alice, team_a, name="alices")
    assert decide(api_as(bob), alices, "approve").status_code == 403
    assert decide(api_as(bob), alices, "deny", comment="no").status_code == 403
    theirs.refresh_from_db()
    alices.refresh_from_db()
    assert theirs.state == alices.state == State.PENDING_APPROVAL


def test_a_tenant_admin_may_not_approve_her_own_request(api_as, alice, team_a):
    own = make_pending(alice, team_a)
    response = decide(api_as(alice), own, "approve")
    assert response.status_code == 403
    assert "your own request" in response.json()["error"]["message"]


def test_anonymous_callers_are_refused(client, bob, team_a):
    pending = make_pending(bob, team_a)
    response = client.post(f"{REQUESTS}{pending.pk}/approve/", {}, content_type="application/json")
    assert response.status_code in (401, 403)
    pending.refresh_from_db()
    assert pending.state == State.PENDING_APPROVAL


def test_approve_and_deny_are_in_the_openapi_schema(api_as, bob):
    schema = api_as(bob).get("/api/schema/", {"format": "json"}).json()
    for verb in ("approve", "deny"):
        operation = schema["paths"][f"/api/v1/claim-requests/{{id}}/{verb}/"]["post"]
        assert operation["summary"]
        assert {"200", "403", "404", "409"} <= set(operation["responses"])
    create = schema["paths"]["/api/v1/claim-requests/"]["post"]
    assert "202" in create["responses"]
