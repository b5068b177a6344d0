"""Claim pages: scoped to the user's tenants, with one gate for a single claim."""

from __future__ import annotations

import pytest
from django.http import Http404

from claims.access import get_claim_for_user
from tests.devices.cluster_data import load_fixture_cluster

pytestmark = pytest.mark.django_db

TEAM_A_CLAIM = "/claims/gpu-test1/pod1-gpu-nscrq/"


@pytest.fixture
def mirrored_cluster(db):
    load_fixture_cluster()


def names(response) -> set[str]:
    return {f"{c.namespace}/{c.name}" for c in response.context["table"].data}


def test_anonymous_visitors_are_sent_to_sign_in(client, mirrored_cluster):
    for url in ("/claims/", TEAM_A_CLAIM):
        assert client.get(url)["Location"].startswith("/login/")


@pytest.mark.parametrize("persona", ["alice", "bob"])
def test_team_members_see_only_their_namespaces_claims(
    client_as, personas, mirrored_cluster, persona
):
    response = client_as(personas[persona]).get("/claims/")
    assert names(response) == {"gpu-test1/pod1-gpu-nscrq", "gpu-test1/pod2-gpu-vkpsr"}
    assert client_as(personas[persona]).get(TEAM_A_CLAIM).status_code == 200


def test_another_tenant_sees_none_of_them(client_as, carol, mirrored_cluster):
    response = client_as(carol).get("/claims/")
    assert names(response) == set()
    assert b"No claims yet" in response.content
    assert client_as(carol).get(TEAM_A_CLAIM).status_code == 404


def test_portal_admins_see_every_claim(client_as, root, mirrored_cluster):
    assert len(names(client_as(root).get("/claims/"))) == 13


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "namespace=gpu-memory",
            {"gpu-memory/big-memory-gpu", "gpu-memory/test-gpu-memory-gpu-claim-zbq8h"},
        ),
        (
            "state=pending",
            {"gpu-memory/big-memory-gpu", "gpu-test6/pod-5f7d8c9b4-kq2wz-a100-vjcmc"},
        ),
        ("state=allocated", set()),
    ],
)
def test_the_claim_list_filters(client_as, root, mirrored_cluster, query, expected):
    response = client_as(root).get(f"/claims/?{query}")
    assert names(response) == expected


def test_the_claim_list_filters_with_htmx(client_as, alice, mirrored_cluster):
    response = client_as(alice).get("/claims/?q=pod2", HTTP_HX_REQUEST="true")
    content = response.content.decode()
    assert "<html" not in content
    assert "pod2-gpu-vkpsr" in content
    assert "pod1-gpu-nscrq" not in content


def test_the_claim_list_query_count_does_not_grow_with_claims(
    client_as, root, mirrored_cluster, django_assert_max_num_queries
):
    client = client_as(root)
    with django_assert_max_num_queries(6):
        client.get("/claims/")


def test_a_claim_page_shows_requests_results_and_consumers(client_as, bob, mirrored_cluster):
    content = client_as(bob).get(TEAM_A_CLAIM).content.decode()
    assert "gpu.nvidia.com" in content
    assert "ExactCount" in content
    assert 'href="/devices/' in content  # the allocated device links to its page
    assert "pod1" in content
    assert "Running" in content
    assert "metadata.name" in content  # the node selector
    assert "Raw JSON" in content


def test_the_gate_raises_404_for_invisible_and_missing_claims(alice, carol, mirrored_cluster):
    assert get_claim_for_user(alice, "gpu-test1", "pod1-gpu-nscrq").name == "pod1-gpu-nscrq"
    with pytest.raises(Http404):
        get_claim_for_user(carol, "gpu-test1", "pod1-gpu-nscrq")
    with pytest.raises(Http404):
        get_claim_for_user(alice, "gpu-test1", "no-such-claim")


def test_the_driver_filter_keeps_claims_with_a_result_from_that_driver(
    client_as, root, mirrored_cluster
):
    claims = client_as(root).get("/claims/?driver=gpu.example.com").context["table"].data
    assert "admin-access/pod0-admin-gpu-z7wjx" in {f"{c.namespace}/{c.name}" for c in claims}
    assert "gpu-test1" not in {c.namespace for c in claims}
    for claim in claims:
        assert claim.allocated_devices.filter(driver="gpu.example.com").exists()
