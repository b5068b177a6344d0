"""Claim pages: scoped to the user's tenants, with one gate for a single claim."""

from __future__ import annotations

import pytest
from django.http import Http404

from claims.access import get_claim_for_user
from claims.models import SIMULATED_SCHEDULER_ANNOTATION, ResourceClaim
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
    client_as, root, alice, mirrored_cluster, django_assert_num_queries
):
    admin, member = client_as(root), client_as(alice)
    # session, user, count, page, the filter form's namespaces and drivers
    with django_assert_num_queries(6):
        admin.get("/claims/")
    # a member's gate is a subquery of the same queries (plus the navigation's: does the
    # member administer a tenant, so that it shows Approvals?)
    with django_assert_num_queries(7):
        member.get("/claims/")
    with django_assert_num_queries(4):  # the fragment has no filter form
        admin.get("/claims/?state=pending", HTTP_HX_REQUEST="true")


def test_a_claim_page_costs_a_fixed_number_of_queries(
    client_as, root, mirrored_cluster, django_assert_num_queries
):
    client = client_as(root)
    # session, user, claim, results with their devices, consumers, pods, idleness,
    # utilisation rollups
    with django_assert_num_queries(8):
        client.get(TEAM_A_CLAIM)
    with django_assert_num_queries(8):
        client.get("/claims/admin-access/pod0-admin-gpu-z7wjx/")
    with django_assert_num_queries(6):  # the live fragment: no idleness, no utilisation
        client.get(TEAM_A_CLAIM, HTTP_HX_REQUEST="true")


def test_an_admin_access_claim_counts_the_devices_it_observes(client_as, root, mirrored_cluster):
    response = client_as(root).get("/claims/?namespace=admin-access")
    (claim,) = response.context["table"].data
    assert claim.device_count == 0
    assert claim.observed_device_count == 8
    content = response.content.decode()
    assert "8 (admin access)" in content
    page = client_as(root).get("/claims/admin-access/pod0-admin-gpu-z7wjx/").content.decode()
    assert "8 devices (admin access: observed, not held)" in page
    assert "0 devices" not in page


def test_the_claim_list_refreshes_itself_with_its_filters(client_as, alice, mirrored_cluster):
    page = client_as(alice).get("/claims/?q=pod2").content.decode()
    assert 'hx-get="/claims/?q=pod2"' in page
    assert "every 10s" in page
    poll = client_as(alice).get("/claims/?q=pod2", HTTP_HX_REQUEST="true").content.decode()
    assert poll.lstrip().startswith('<div id="resourceclaim-table"')
    assert "pod1-gpu-nscrq" not in poll


def test_the_claim_page_refreshes_its_allocation_and_consumers(client_as, bob, mirrored_cluster):
    page = client_as(bob).get(TEAM_A_CLAIM).content.decode()
    assert f'hx-get="{TEAM_A_CLAIM}"' in page
    fragment = client_as(bob).get(TEAM_A_CLAIM, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment
    assert "Raw JSON" not in fragment
    assert 'id="claim-consumers" hx-swap-oob="true"' in fragment
    assert 'id="claim-state-badge" hx-swap-oob="true"' in fragment
    assert "/devices/gpu.nvidia.com/dgx-h100-01/gpu-0/" in fragment


def test_the_live_claim_page_is_gated_like_the_page(client_as, carol, mirrored_cluster):
    assert client_as(carol).get(TEAM_A_CLAIM, HTTP_HX_REQUEST="true").status_code == 404


def test_a_claim_page_shows_requests_results_and_consumers(client_as, bob, mirrored_cluster):
    content = client_as(bob).get(TEAM_A_CLAIM).content.decode()
    assert "gpu.nvidia.com" in content
    assert "ExactCount" in content
    assert 'href="/devices/gpu.nvidia.com/dgx-h100-01/gpu-0/"' in content  # its device's page
    assert "pod1" in content
    assert "Running" in content
    assert "metadata.name" in content  # the node selector
    assert "Raw JSON" in content


SIMULATED_NOTE = "Allocated by the demo's simulated scheduler (not a real kube-scheduler)"


def test_a_claim_the_demos_simulated_scheduler_allocated_says_so(client_as, bob, mirrored_cluster):
    claim = ResourceClaim.objects.get(namespace="gpu-test1", name="pod1-gpu-nscrq")
    claim.raw["metadata"]["annotations"][SIMULATED_SCHEDULER_ANNOTATION] = "true"
    claim.save(update_fields=["raw"])

    page = client_as(bob).get(TEAM_A_CLAIM).content.decode()
    live = client_as(bob).get(TEAM_A_CLAIM, HTTP_HX_REQUEST="true").content.decode()
    other = client_as(bob).get("/claims/gpu-test1/pod2-gpu-vkpsr/").content.decode()

    assert SIMULATED_NOTE in page and SIMULATED_NOTE in live
    assert SIMULATED_NOTE not in other


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
