"""Tenancy API: visibility per persona, writes for portal admins, one error format."""

from __future__ import annotations

import pytest

from portal.models import AuditEvent, Quota, Tenant


@pytest.mark.django_db
def test_members_list_only_their_tenants(api_as, alice, carol, root):
    assert [t["slug"] for t in api_as(alice).get("/api/v1/tenants/").json()["results"]] == [
        "team-a"
    ]
    assert [t["slug"] for t in api_as(carol).get("/api/v1/tenants/").json()["results"]] == [
        "team-b"
    ]
    assert api_as(root).get("/api/v1/tenants/").json()["count"] == 2


@pytest.mark.django_db
def test_a_tenant_lists_its_namespaces(api_as, bob):
    tenant = api_as(bob).get("/api/v1/tenants/team-a/").json()
    assert tenant["namespaces"] == ["gpu-test1", "team-a-dev"]


@pytest.mark.django_db
def test_members_cannot_change_tenants(api_as, alice):
    response = api_as(alice).patch("/api/v1/tenants/team-a/", {"name": "Mine"}, format="json")
    assert response.status_code == 403
    assert response.json() == {
        "error": {
            "status": 403,
            "code": "permission_denied",
            "message": "You do not have permission to perform this action.",
        }
    }


@pytest.mark.django_db
def test_a_portal_admin_creates_a_tenant_with_namespaces_and_it_is_audited(api_as, root):
    response = api_as(root).post(
        "/api/v1/tenants/", {"name": "Team C", "namespaces": ["team-c"]}, format="json"
    )
    assert response.status_code == 201, response.json()
    assert response.json()["slug"] == "team-c"
    assert Tenant.objects.get(slug="team-c").namespace_names == ["team-c"]
    event = AuditEvent.objects.get(object_type="portal.Tenant", action="created")
    assert event.actor == root
    assert event.after["namespaces"] == ["team-c"]


@pytest.mark.django_db
def test_a_namespace_cannot_belong_to_two_tenants(api_as, root, team_a):
    response = api_as(root).post(
        "/api/v1/tenants/", {"name": "Team C", "namespaces": ["team-a-dev"]}, format="json"
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert error["fields"]["namespaces"] == [
        "Namespace team-a-dev already belongs to tenant Team A."
    ]
    assert not Tenant.objects.filter(name="Team C").exists()


@pytest.mark.django_db
def test_a_bad_namespace_name_gets_a_specific_error(api_as, root):
    response = api_as(root).post(
        "/api/v1/tenants/", {"name": "Team C", "namespaces": ["Not_A_Label"]}, format="json"
    )
    assert response.status_code == 400
    assert "Kubernetes namespace name" in response.json()["error"]["message"]


@pytest.mark.django_db
def test_quotas_are_filtered_by_tenant_and_visible_only_to_members(api_as, alice, carol, root):
    assert api_as(alice).get("/api/v1/quotas/").json()["count"] == 1
    assert api_as(carol).get("/api/v1/quotas/?tenant=team-a").json()["count"] == 0
    assert api_as(root).get("/api/v1/quotas/?tenant=team-b").json()["count"] == 1


@pytest.mark.django_db
def test_saving_the_same_quota_twice_records_one_change(api_as, root, team_a):
    body = {
        "tenant": "team-a",
        "device_class_name": "mig.nvidia.com",
        "max_devices": 4,
        "max_lease": "P7D",
    }
    first = api_as(root).post("/api/v1/quotas/", body, format="json")
    assert first.status_code == 201, first.json()
    quota_id = first.json()["id"]
    again = api_as(root).put(f"/api/v1/quotas/{quota_id}/", body, format="json")
    assert again.status_code == 200
    assert Quota.objects.filter(device_class_name="mig.nvidia.com").count() == 1
    assert AuditEvent.objects.filter(object_type="portal.Quota").count() == 1


@pytest.mark.django_db
def test_a_negative_quota_is_refused_with_the_field_named(api_as, root, team_a):
    response = api_as(root).post(
        "/api/v1/quotas/",
        {"tenant": "team-a", "device_class_name": "x", "max_devices": -1},
        format="json",
    )
    assert response.status_code == 400
    assert "max_devices" in response.json()["error"]["fields"]


@pytest.mark.django_db
def test_lists_are_paginated_consistently(api_as, root, team_a, team_b):
    page = api_as(root).get("/api/v1/tenants/?limit=1").json()
    assert set(page) == {"count", "next", "previous", "results"}
    assert page["count"] == 2
    assert len(page["results"]) == 1
    assert "offset=1" in page["next"]


@pytest.mark.django_db
def test_the_audit_trail_is_for_admins(api_as, alice, bob, root, team_a):
    AuditEvent.objects.create(action="updated", tenant=team_a, object_type="portal.Tenant")
    assert api_as(alice).get("/api/v1/audit-events/").json()["count"] == 1
    assert api_as(bob).get("/api/v1/audit-events/").json()["count"] == 0
    assert api_as(root).get("/api/v1/audit-events/?tenant=team-a").json()["count"] == 1


@pytest.mark.django_db
def test_me_describes_the_user_and_their_roles(api_as, alice):
    me = api_as(alice).get("/api/v1/me/").json()
    assert me["is_portal_admin"] is False
    assert me["memberships"] == [{"tenant": "team-a", "username": "alice", "role": "tenant_admin"}]
