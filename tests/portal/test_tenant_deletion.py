"""A tenant that has claim requests is kept: the API answers 409 ``conflict`` saying what still
belongs to it, and the admin refuses with the same words (one rule, in
``portal.services.tenants``). Measured before: ``DELETE /api/v1/tenants/{slug}/`` of such a
tenant answered 500 (``ProtectedError``); schemathesis found it."""

from __future__ import annotations

import pytest

from portal.models import AuditEvent, Tenant
from portal.services.tenants import TenantInUseError, delete_tenant
from tests.claims.conftest import make_held, make_pending

pytestmark = pytest.mark.django_db

REFUSAL = "Team A cannot be deleted: 2 claim requests still belong to it"


@pytest.fixture
def with_requests(bob, team_a):
    make_held(bob, team_a)
    make_pending(bob, team_a)
    return team_a


def test_the_api_refuses_with_409_saying_what_belongs_to_the_tenant(api_as, root, with_requests):
    response = api_as(root).delete("/api/v1/tenants/team-a/")
    assert response.status_code == 409, response.content
    error = response.json()["error"]
    assert (error["status"], error["code"]) == (409, "conflict")
    assert error["message"].startswith(REFUSAL)
    assert Tenant.objects.filter(slug="team-a").exists()
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.DELETED).exists()


def test_one_ended_request_is_enough_to_keep_the_tenant(api_as, root, bob, team_a):
    held = make_held(bob, team_a)
    held.state = "released"
    held.save()
    response = api_as(root).delete("/api/v1/tenants/team-a/")
    assert response.status_code == 409
    assert "1 claim request still belong" in response.json()["error"]["message"]


def test_a_tenant_without_requests_is_deleted_with_its_namespaces_and_audited(
    api_as, root, alice, team_a
):
    assert api_as(root).delete("/api/v1/tenants/team-a/").status_code == 204
    assert not Tenant.objects.filter(slug="team-a").exists()
    event = AuditEvent.objects.get(action=AuditEvent.Action.DELETED)
    assert event.object_repr == "Team A"
    assert event.before["namespaces"] == ["gpu-test1", "team-a-dev"]


def test_the_service_refuses_and_changes_nothing(root, with_requests):
    with pytest.raises(TenantInUseError) as refused:
        delete_tenant(actor=root, tenant=with_requests)
    assert refused.value.messages[0].startswith(REFUSAL)
    assert with_requests.namespaces.count() == 2


def test_the_admin_says_why_and_keeps_the_tenant(client_as, root, with_requests):
    client = client_as(root)
    url = f"/admin/portal/tenant/{with_requests.pk}/delete/"
    page = client.get(url)
    assert page.status_code == 200
    assert REFUSAL in page.content.decode()
    client.post(url, {"post": "yes"})
    assert Tenant.objects.filter(pk=with_requests.pk).exists()


def test_the_admin_bulk_action_keeps_it_too(client_as, root, with_requests, team_b):
    client = client_as(root)
    action = {
        "action": "delete_selected",
        "_selected_action": [with_requests.pk, team_b.pk],
        "post": "yes",
    }
    page = client.post("/admin/portal/tenant/", action)
    assert REFUSAL in page.content.decode()
    assert set(Tenant.objects.values_list("slug", flat=True)) == {"team-a", "team-b"}


def test_the_schema_documents_the_409(client_as, root):
    schema = client_as(root).get("/api/schema/?format=json").json()
    responses = schema["paths"]["/api/v1/tenants/{slug}/"]["delete"]["responses"]
    assert "409" in responses
    assert "claim requests" in responses["409"]["description"].lower()
