"""docs/claim-requests-api.md's table of answers says what the API answers: every status an
operation on claim requests declares (besides the errors every endpoint may give, docs/security.md)
is in it, and the idempotent release answers as the table says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.utils import timezone

from claims.models import ClaimRequest

pytestmark = pytest.mark.django_db
DOC = Path(__file__).resolve().parents[2] / "docs" / "claim-requests-api.md"
REQUESTS = "/api/v1/claim-requests/"
# Declared by every operation (toolkit/api/schema.py); documented once, in docs/security.md.
EVERYWHERE = {"401", "405", "406", "413", "429", "503"}
OPERATIONS = [
    ("/api/v1/claim-requests/", "post"),
    ("/api/v1/claim-requests/{id}/release/", "post"),
    ("/api/v1/claim-requests/{id}/renew/", "post"),
    ("/api/v1/claim-requests/{id}/approve/", "post"),
    ("/api/v1/claim-requests/{id}/deny/", "post"),
]


def ended(user, tenant, state):
    return ClaimRequest.objects.create(
        tenant=tenant,
        namespace="gpu-test1",
        name="done",
        device_class_name="gpu.nvidia.com",
        mode="scheduler",
        form={"count": 1},
        spec={"devices": {"requests": []}},
        state=state,
        requested_by=user,
        ended_at=timezone.now(),
    )


def documented_statuses() -> set[str]:
    text = DOC.read_text()
    table = text[text.index("| status | code | when |") :].split("\n\n")[0]
    return {
        status
        for line in table.splitlines()[2:]
        for status in re.findall(r"\b[1-5]\d\d\b", line.split("|")[1])
    }


def test_every_status_the_schema_declares_for_claim_requests_is_in_the_docs_table(api_as, bob):
    schema = api_as(bob).get("/api/schema/", {"format": "json"}).json()
    documented = documented_statuses()
    for path, method in OPERATIONS:
        declared = set(schema["paths"][path][method]["responses"]) - EVERYWHERE
        assert declared <= documented, (path, declared - documented)


def test_the_docs_table_says_renew_and_create_may_answer_202():
    text = DOC.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| 202 |"))
    assert "pending_approval" in row and "renew" in row


@pytest.mark.parametrize(
    "state",
    [ClaimRequest.State.RELEASED, ClaimRequest.State.WITHDRAWN, ClaimRequest.State.EXPIRED],
)
def test_releasing_an_ended_request_answers_200_and_changes_nothing(api_as, bob, team_a, state):
    request = ended(bob, team_a, state)
    response = api_as(bob).post(f"{REQUESTS}{request.pk}/release/", {}, format="json")
    assert response.status_code == 200
    assert response.json()["state"] == state
    row = next(line for line in DOC.read_text().splitlines() if line.startswith("| 200 |"))
    assert "release is idempotent" in row


def test_renewing_an_ended_request_is_a_409_conflict(api_as, bob, team_a):
    request = ended(bob, team_a, ClaimRequest.State.RELEASED)
    response = api_as(bob).post(f"{REQUESTS}{request.pk}/renew/", {"lease": "P1D"}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"
