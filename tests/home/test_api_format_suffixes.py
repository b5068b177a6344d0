"""The API has one spelling per URL: ``.json`` format-suffix URLs are a clean 404 in the API's
error format and change nothing. Measured before: 12 of 31 suffix URLs tried, the router's
custom actions, answered 500 ("got an unexpected keyword argument 'format'") to any signed-in
user. ``tests/portal/test_url_access.py`` walks every API URL the same way."""

from __future__ import annotations

import pytest

from claims.models import ClaimRequest
from tests.claims.conftest import make_held, make_pending

pytestmark = pytest.mark.django_db


@pytest.fixture
def requests(alice, bob, team_a, mirrored_cluster):
    return {"held": make_held(bob, team_a), "pending": make_pending(bob, team_a)}


def suffix_urls(requests):
    held, pending = requests["held"].pk, requests["pending"].pk
    return [
        ("get", "/api/v1/devices/export.json", None),
        ("post", "/api/v1/claim-requests/would-it-fit.json", {"namespace": "gpu-test1"}),
        ("post", f"/api/v1/claim-requests/{held}/renew.json", {"lease": "P1D"}),
        ("post", f"/api/v1/claim-requests/{held}/release.json", {}),
        ("post", f"/api/v1/claim-requests/{pending}/approve.json", {"comment": "ok"}),
        ("post", f"/api/v1/claim-requests/{pending}/deny.json", {"comment": "no"}),
        ("get", "/api/v1/tenants/team-a/members.json", None),
        ("post", "/api/v1/tenants/team-a/members.json", {"username": "carol"}),
        ("get", "/api/v1/nodes/dgx-h100-01/utilisation.json", None),
        ("get", "/api/v1/claim-requests.json", None),
        ("get", "/api/v1/tenants/team-a.json", None),
    ]


@pytest.mark.parametrize("persona", ["bob", "alice"])
def test_a_json_suffix_is_a_clean_404_that_changes_nothing(
    client_as, personas, requests, carol, persona
):
    client = client_as(personas[persona])
    for method, url, body in suffix_urls(requests):
        response = getattr(client, method)(url, body, content_type="application/json")
        assert response.status_code == 404, f"{method.upper()} {url}: {response.status_code}"
        assert response.json()["error"] == {
            "status": 404,
            "code": "not_found",
            "message": "Not found.",
        }
    states = dict(ClaimRequest.objects.values_list("name", "state"))
    assert states == {"short-run": "applied", "big-run": "pending_approval"}
    assert not requests["held"].tenant.memberships.filter(user__username="carol").exists()


def test_the_same_urls_without_the_suffix_still_answer(client_as, alice, requests):
    client = client_as(alice)
    assert client.get("/api/v1/devices/export/").status_code == 200
    assert client.get("/api/v1/tenants/team-a/members/").status_code == 200
    assert client.get("/api/v1/nodes/dgx-h100-01/utilisation/").status_code == 200
    assert client.get("/api/v1/claim-requests/?format=json").status_code == 200
