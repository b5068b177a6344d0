"""Tenancy pages: what each persona sees."""

from __future__ import annotations

import re

import pytest

from portal.models import AuditEvent


@pytest.mark.django_db
def test_the_dashboard_says_no_cluster_is_connected_yet(client_as, alice):
    response = client_as(alice).get("/")
    assert response.status_code == 200
    assert b"No cluster connected yet" in response.content
    assert b"Team A" in response.content


@pytest.mark.django_db
def test_a_user_without_a_tenant_is_told_what_to_do(client_as, db):
    from tests.factories import UserFactory

    response = client_as(UserFactory()).get("/")
    assert b"You are not in a tenant yet" in response.content


@pytest.mark.django_db
def test_members_see_only_their_tenants_in_the_list(client_as, bob, carol):
    content = client_as(bob).get("/tenants/").content
    assert b"Team A" in content
    assert b"Team B" not in content


@pytest.mark.django_db
def test_the_tenant_list_filters_with_htmx(client_as, root, team_a, team_b):
    response = client_as(root).get("/tenants/?q=team+b", HTTP_HX_REQUEST="true")
    assert b"<html" not in response.content
    assert b"Team B" in response.content
    assert b"Team A" not in response.content


@pytest.mark.django_db
def test_the_tenant_list_heads_each_column_with_what_it_holds(client_as, root, team_a):
    content = client_as(root).get("/tenants/").content.decode()
    headers = re.findall(r"<th[^>]*>(.*?)</th>", content, re.DOTALL)
    labels = [re.sub(r"<[^>]+>", "", header).strip() for header in headers]
    assert labels == ["Name", "Slug", "Namespaces", "Members", "Quotas", "Approval"]


@pytest.mark.django_db
def test_the_tenant_list_query_count_does_not_grow_with_tenants(
    client_as, root, team_a, team_b, django_assert_max_num_queries
):
    client = client_as(root)
    with django_assert_max_num_queries(8):
        client.get("/tenants/")


@pytest.mark.django_db
def test_a_tenant_page_shows_namespaces_members_and_quotas(client_as, alice, bob):
    content = client_as(bob).get("/tenants/team-a/").content.decode()
    assert "team-a-dev" in content
    assert "Tenant admin" in content
    assert "gpu.nvidia.com" in content
    assert "Recent changes" not in content  # members do not see the audit trail


@pytest.mark.django_db
def test_tenant_admins_see_their_tenants_recent_changes(client_as, alice, team_a):
    AuditEvent.objects.create(
        action="updated",
        tenant=team_a,
        object_type="portal.Quota",
        object_repr="Team A: gpu.nvidia.com",
        actor_name="root",
    )
    content = client_as(alice).get("/tenants/team-a/").content.decode()
    assert "Recent changes" in content
    assert "Team A: gpu.nvidia.com" in content


@pytest.mark.django_db
def test_an_unknown_page_uses_the_portal_layout(client_as, alice, settings):
    settings.DEBUG = False
    response = client_as(alice).get("/no/such/page/")
    assert response.status_code == 404
    assert b"Nothing here" in response.content
    assert b"DRA Portal" in response.content


@pytest.mark.django_db
def test_the_admin_lists_tenants_with_search(client_as, root, team_a):
    response = client_as(root).get("/admin/portal/tenant/?q=team-a-dev")
    assert response.status_code == 200
    assert b"Team A" in response.content


@pytest.mark.django_db
def test_changes_made_in_the_admin_are_audited(client_as, root, team_a):
    quota = team_a.quotas.get()
    response = client_as(root).post(
        f"/admin/portal/quota/{quota.pk}/change/",
        {"tenant": team_a.pk, "device_class_name": "gpu.nvidia.com", "max_devices": 3},
    )
    assert response.status_code == 302
    event = AuditEvent.objects.get(object_type="portal.Quota")
    assert (event.before["max_devices"], event.after["max_devices"]) == (8, 3)
    assert event.actor == root


@pytest.fixture
def busier_portal(alice, bob, carol, root):
    """More tenants, namespaces, quotas and tokens than the personas have: a page whose query
    count grew with them would show here."""
    from portal.services.api_tokens import issue_api_token
    from tests.factories import QuotaFactory, TenantFactory, TenantNamespaceFactory

    for number in range(6):
        tenant = TenantFactory(name=f"Extra {number}", slug=f"extra-{number}")
        for namespace in range(3):
            TenantNamespaceFactory(tenant=tenant, name=f"extra-{number}-{namespace}")
        QuotaFactory(tenant=tenant, device_class_name="gpu.nvidia.com", max_devices=1)
    for user in (alice, bob, root):
        for number in range(4):
            issue_api_token(user=user, name=f"token-{number}", lifetime=None)


@pytest.mark.parametrize(
    ("who", "url", "queries"),
    [
        # session, user, then the page's own: tenants page + count + namespaces prefetch
        ("root", "/tenants/", 5),
        ("alice", "/tenants/", 5),
        ("root", "/tenants/?q=extra", 5),
        # tenant detail: the same for any number of members, namespaces, quotas and events;
        # usage against quota adds four (claims, their results with device memory, requests,
        # quotas; claims' specs are parsed once per version, so the warm-up read them), and
        # GPU utilisation one (the tenant's usage rollups)
        ("root", "/tenants/team-a/", 13),
        ("alice", "/tenants/team-a/", 13),
        ("bob", "/tenants/team-a/", 12),
        # tokens page: session, user, the tokens, the tenants' token-lifetime policy
        ("bob", "/account/tokens/", 4),
    ],
)
def test_the_tenancy_pages_cost_a_fixed_number_of_queries(
    client_as, request, busier_portal, django_assert_num_queries, who, url, queries
):
    client = client_as(request.getfixturevalue(who))
    client.get(url)  # the session is written on the first request
    with django_assert_num_queries(queries):
        assert client.get(url).status_code == 200


def test_a_malformed_page_request_gets_the_portals_400_page(client_as, bob):
    query = "&".join(f"q{number}=x" for number in range(60))  # over the parameter limit
    response = client_as(bob).get(f"/devices/?{query}")
    assert response.status_code == 400
    assert "That request cannot be read" in response.content.decode()
