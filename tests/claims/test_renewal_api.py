"""Renewals in the API: one that waits for approval is answered 202 with the pending renewal,
as a submission that waits is; approve and deny act on it."""

from __future__ import annotations

import pytest

from claims.models import ClaimRequest

pytestmark = pytest.mark.django_db
REQUESTS = "/api/v1/claim-requests/"


def post(client, request, verb, **body):
    return client.post(f"{REQUESTS}{request.pk}/{verb}/", body, format="json")


def test_a_renewal_that_needs_approval_is_answered_202_with_the_pending_renewal(api_as, held, bob):
    expires_at = api_as(bob).get(f"{REQUESTS}{held.pk}/").json()["expires_at"]
    response = post(api_as(bob), held, "renew", lease="P7D")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["state"] == "applied"
    assert (body["lease"], body["expires_at"]) == ("PT2H", expires_at)  # runs on
    assert body["renewal"]["state"] == "pending_approval"
    assert body["renewal"]["lease"] == "P7D"
    assert body["renewal"]["requested_by"] == "bob"
    assert body["renewal"]["approval_reasons"] == [
        "A lease of 7d: leases longer than 3d need approval."
    ]


def test_a_renewal_within_the_policy_is_answered_200(api_as, held, bob):
    response = post(api_as(bob), held, "renew", lease="P1D")
    assert response.status_code == 200
    assert response.json()["lease"] == "P1D"
    assert response.json()["renewal"] is None


def test_the_tenant_admin_approves_the_renewal_and_the_lease_is_renewed(api_as, held, bob, alice):
    post(api_as(bob), held, "renew", lease="P7D")
    listed = api_as(alice).get(REQUESTS, {"awaiting_approval": "true"}).json()
    assert [item["id"] for item in listed["results"]] == [str(held.pk)]
    response = post(api_as(alice), held, "approve", comment="ok")
    assert response.status_code == 200, response.content
    assert (response.json()["lease"], response.json()["renewal"]) == ("P7D", None)


def test_a_denied_renewal_leaves_the_lease_and_a_member_may_not_decide(api_as, held, bob, alice):
    post(api_as(bob), held, "renew", lease="P7D")
    assert post(api_as(bob), held, "approve").status_code == 403
    response = post(api_as(alice), held, "deny", comment="no")
    assert response.status_code == 200
    assert (response.json()["lease"], response.json()["renewal"]) == ("PT2H", None)
    held.refresh_from_db()
    assert held.state == ClaimRequest.State.APPLIED
