"""The claims API: read-only and scoped to the user's tenants, like the pages."""

from __future__ import annotations

import pytest

from tests.devices.cluster_data import load_fixture_cluster

pytestmark = pytest.mark.django_db

TEAM_A_CLAIM = "/api/v1/resource-claims/gpu-test1/pod1-gpu-nscrq/"


@pytest.fixture
def mirrored_cluster(db):
    load_fixture_cluster()


def test_anonymous_requests_are_refused(client, mirrored_cluster):
    assert client.get("/api/v1/resource-claims/").status_code in (401, 403)
    assert client.get(TEAM_A_CLAIM).status_code in (401, 403)


def test_members_list_only_their_namespaces_claims(api_as, alice, carol, root, mirrored_cluster):
    names = {c["name"] for c in api_as(alice).get("/api/v1/resource-claims/").json()["results"]}
    assert names == {"pod1-gpu-nscrq", "pod2-gpu-vkpsr"}
    assert api_as(carol).get("/api/v1/resource-claims/").json()["count"] == 0
    assert api_as(root).get("/api/v1/resource-claims/").json()["count"] == 13


def test_one_claim_is_addressed_by_namespace_and_name(api_as, bob, mirrored_cluster):
    body = api_as(bob).get(TEAM_A_CLAIM).json()
    assert body["state"] == "in_use"
    assert body["results"][0]["device"] == "gpu-0"
    assert body["results"][0]["device_url"].endswith(
        "/api/v1/devices/gpu.nvidia.com/dgx-h100-01/gpu-0/"
    )
    assert api_as(bob).get(body["results"][0]["device_url"]).status_code == 200
    assert body["reserved_for"][0]["name"] == "pod1"
    assert body["url"].endswith(TEAM_A_CLAIM)


def test_another_tenant_gets_404_for_a_team_a_claim(api_as, carol, mirrored_cluster):
    response = api_as(carol).get(TEAM_A_CLAIM)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_the_claims_api_uses_the_pages_filters(api_as, root, mirrored_cluster):
    body = api_as(root).get("/api/v1/resource-claims/?state=pending").json()
    assert {c["name"] for c in body["results"]} == {
        "big-memory-gpu",
        "pod-5f7d8c9b4-kq2wz-a100-vjcmc",
    }


def test_the_claims_api_is_read_only(api_as, root, mirrored_cluster):
    assert api_as(root).delete(TEAM_A_CLAIM).status_code == 405


def test_a_claims_tenant_follows_its_namespace_between_tenants(
    alice, carol, root, mirrored_cluster
):
    from claims.models import ResourceClaim
    from portal.models import Tenant
    from portal.services.tenants import set_tenant_namespaces

    team_a, team_b = Tenant.objects.get(slug="team-a"), Tenant.objects.get(slug="team-b")
    claim = ResourceClaim.objects.filter(namespace="gpu-test1").first()
    assert claim.tenant == team_a
    set_tenant_namespaces(actor=root, tenant=team_a, namespaces=["team-a-dev"])
    claim.refresh_from_db()
    assert claim.tenant is None
    set_tenant_namespaces(
        actor=root, tenant=team_b, namespaces=[*team_b.namespace_names, "gpu-test1"]
    )
    claim.refresh_from_db()
    assert claim.tenant == team_b


def test_why_a_claim_is_pending_is_the_claim_pages_explanation(api_as, root, bob, mirrored_cluster):
    body = api_as(root).get("/api/v1/resource-claims/gpu-memory/big-memory-gpu/why/").json()
    assert body["pending"] is True
    assert set(body) >= {"fits", "node", "error", "funnels", "hints"}
    # The fixture has no free H100 with 80Gi for it: the funnel names the stage that stops it.
    assert body["fits"] is False
    assert body["funnels"][0]["request"] == "gpu" and body["funnels"][0]["blockingStage"]
    allocated = api_as(bob).get(f"{TEAM_A_CLAIM}why/").json()
    assert allocated["pending"] is False and allocated["funnels"] == []
    assert (
        api_as(bob).get("/api/v1/resource-claims/gpu-memory/big-memory-gpu/why/").status_code == 404
    )
