"""Tenant admins manage their own tenant: members and roles, settings; portal admins also
create tenants and set namespaces. A tenant always keeps one tenant admin."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.exceptions import ValidationError

from portal.models import AuditEvent, Membership, Tenant
from portal.services.tenants import LastTenantAdminError, remove_member, set_member
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def dana(db):
    return UserFactory(username="dana")


def _membership(user) -> Membership:
    return Membership.objects.get(user=user)


def test_a_tenant_admin_adds_a_member_by_username(client_as, alice, dana, team_a):
    response = client_as(alice).post(
        "/tenants/team-a/members/", {"username": "dana", "role": "member"}
    )
    assert response.status_code == 302
    assert _membership(dana).role == "member"
    event = AuditEvent.objects.get(object_type="portal.Membership")
    assert (event.action, event.actor, event.after["user"]) == ("created", alice, "dana")


def test_adding_an_unknown_user_or_a_member_again_is_a_clear_error(client_as, alice, bob):
    client = client_as(alice)
    unknown = client.post("/tenants/team-a/members/", {"username": "nobody", "role": "member"})
    assert unknown.status_code == 422
    assert "There is no user named “nobody”." in unknown.content.decode()
    assert 'value="nobody"' in unknown.content.decode()  # what was typed stays
    again = client.post("/tenants/team-a/members/", {"username": "bob", "role": "tenant_admin"})
    assert again.status_code == 422
    assert "bob is already a member of Team A (member)." in again.content.decode()
    assert _membership(bob).role == "member"


def test_adding_with_htmx_answers_the_member_panel(client_as, alice, dana):
    response = client_as(alice).post(
        "/tenants/team-a/members/", {"username": "dana", "role": "member"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    content = response.content.decode()
    assert "<html" not in content and 'id="member-panel"' in content
    assert "dana added as member." in content


def test_a_tenant_admin_changes_a_role_and_removes_a_member(client_as, alice, bob):
    client = client_as(alice)
    bob_membership = _membership(bob)
    response = client.post(
        f"/tenants/team-a/members/{bob_membership.pk}/", {"role": "tenant_admin"}
    )
    assert response.status_code == 302
    assert _membership(bob).role == "tenant_admin"
    confirm = client.get(f"/tenants/team-a/members/{bob_membership.pk}/remove/")
    assert confirm.status_code == 200 and "Remove bob from Team A?" in confirm.content.decode()
    assert client.post(f"/tenants/team-a/members/{bob_membership.pk}/remove/").status_code == 302
    assert not Membership.objects.filter(user=bob).exists()
    events = AuditEvent.objects.filter(object_type="portal.Membership").order_by("id")
    assert [(e.action, e.actor) for e in events] == [("updated", alice), ("deleted", alice)]


def test_the_last_tenant_admin_can_be_neither_demoted_nor_removed(client_as, alice, bob):
    client = client_as(alice)
    mine = _membership(alice)
    demote = client.post(f"/tenants/team-a/members/{mine.pk}/", {"role": "member"})
    assert demote.status_code == 422
    assert "alice is the only tenant admin of Team A" in demote.content.decode()
    remove = client.post(f"/tenants/team-a/members/{mine.pk}/remove/")
    assert remove.status_code == 422
    assert "make another member tenant admin first" in remove.content.decode()
    assert _membership(alice).role == "tenant_admin"
    assert not AuditEvent.objects.filter(object_type="portal.Membership").exists()


def test_the_last_admin_rule_holds_for_portal_admins_and_every_entry_point(
    api_as, client_as, root, alice
):
    with pytest.raises(LastTenantAdminError):
        set_member(actor=root, tenant=alice.memberships.get().tenant, user=alice, role="member")
    with pytest.raises(ValidationError):
        remove_member(actor=root, membership=_membership(alice))
    api = api_as(root).delete("/api/v1/tenants/team-a/members/alice/")
    assert api.status_code == 400
    assert "only tenant admin" in api.json()["error"]["message"]
    admin = client_as(root).post(
        f"/admin/portal/membership/{_membership(alice).pk}/delete/", {"post": "yes"}, follow=True
    )
    assert "lice is the only tenant admin of Team A" in admin.content.decode()  # "Alice …"
    assert Membership.objects.filter(user=alice).exists()


def test_with_a_second_admin_the_first_may_step_down(client_as, alice, bob):
    set_member(actor=alice, tenant=_membership(bob).tenant, user=bob, role="tenant_admin")
    mine = _membership(alice)
    assert client_as(alice).post(f"/tenants/team-a/members/{mine.pk}/", {"role": "member"})
    assert _membership(alice).role == "member"


def test_a_tenant_admin_edits_description_approval_and_token_lifetime(client_as, alice, team_a):
    client = client_as(alice)
    form = client.get("/tenants/team-a/edit/").content.decode()
    assert 'name="name"' not in form  # renaming is for portal admins
    response = client.post(
        "/tenants/team-a/edit/",
        {"description": "Vision team", "requires_approval": "on", "max_token_lifetime": "90d"},
    )
    assert response.status_code == 302
    team_a.refresh_from_db()
    assert (team_a.description, team_a.requires_approval, team_a.max_token_lifetime) == (
        "Vision team",
        True,
        dt.timedelta(days=90),
    )
    event = AuditEvent.objects.get(object_type="portal.Tenant")
    assert event.after["max_token_lifetime"] != event.before["max_token_lifetime"]
    page = client.get("/tenants/team-a/").content.decode()
    assert "90d" in page


def test_a_bad_token_lifetime_is_an_error_on_its_field(client_as, alice, team_a):
    response = client_as(alice).post(
        "/tenants/team-a/edit/", {"description": "keep me", "max_token_lifetime": "forever"}
    )
    assert response.status_code == 422
    content = response.content.decode()
    assert 'data-testid="error-max_token_lifetime"' in content and "keep me" in content


def test_namespaces_are_set_by_portal_admins_only(client_as, alice, root, team_a):
    assert client_as(alice).get("/tenants/team-a/namespaces/").status_code == 403
    assert (
        client_as(alice).post("/tenants/team-a/namespaces/", {"namespaces": "x"}).status_code == 403
    )
    response = client_as(root).post(
        "/tenants/team-a/namespaces/", {"namespaces": "team-a-dev\ngpu-test1\nteam-a-ml"}
    )
    assert response.status_code == 302
    assert sorted(team_a.namespace_names) == ["gpu-test1", "team-a-dev", "team-a-ml"]
    bad = client_as(root).post("/tenants/team-a/namespaces/", {"namespaces": "Not_A_Label"})
    assert bad.status_code == 422
    assert "is not a Kubernetes namespace name" in bad.content.decode()


def test_a_namespace_of_another_tenant_is_refused_by_name(client_as, root, team_a, team_b):
    response = client_as(root).post("/tenants/team-a/namespaces/", {"namespaces": "team-b-prod"})
    assert response.status_code == 422
    assert "Namespace team-b-prod already belongs to tenant Team B." in response.content.decode()


def test_the_tenant_page_links_each_namespace_to_its_claims(client_as, bob):
    content = client_as(bob).get("/tenants/team-a/").content.decode()
    assert '/claims/?namespace=gpu-test1"' in content
    assert '/claims/requests/?namespace=gpu-test1"' in content


def test_a_portal_admin_creates_a_tenant_from_the_portal(client_as, root, alice):
    client = client_as(root)
    assert 'href="/tenants/new/"' in client.get("/tenants/").content.decode()
    response = client.post(
        "/tenants/new/", {"name": "Team C", "description": "", "namespaces": "team-c, team-c-dev"}
    )
    assert response.status_code == 302
    tenant = Tenant.objects.get(slug="team-c")
    assert response["Location"] == "/tenants/team-c/"
    assert tenant.namespace_names == ["team-c", "team-c-dev"]
    assert AuditEvent.objects.filter(object_type="portal.Tenant", tenant=tenant).exists()
    assert client_as(alice).get("/tenants/new/").status_code == 403


def test_a_duplicate_tenant_name_is_an_error_on_the_name(client_as, root, team_a):
    response = client_as(root).post("/tenants/new/", {"name": "Team A", "slug": "team-a2"})
    assert response.status_code == 422
    assert 'data-testid="error-name"' in response.content.decode()


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/tenants/team-a/edit/"),
        ("post", "/tenants/team-a/members/"),
        ("post", "/tenants/team-a/members/{pk}/"),
        ("get", "/tenants/team-a/members/{pk}/remove/"),
        ("post", "/tenants/team-a/members/{pk}/remove/"),
        ("get", "/tenants/team-a/namespaces/"),
    ],
)
def test_another_tenant_gets_404_a_member_403_and_a_visitor_the_login(
    client, client_as, alice, bob, carol, method, url
):
    url = url.format(pk=_membership(alice).pk)
    data = {"username": "carol", "role": "tenant_admin", "namespaces": "x"}
    assert getattr(client_as(carol), method)(url, data).status_code == 404
    assert getattr(client_as(bob), method)(url, data).status_code == 403
    anonymous = getattr(client, method)(url, data)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")
    assert _membership(alice).role == "tenant_admin"
    assert not Membership.objects.filter(user=carol, tenant__slug="team-a").exists()


def test_members_see_the_member_list_read_only(client_as, alice, bob):
    content = client_as(bob).get("/tenants/team-a/members/").content.decode()
    assert "alice" in content and "Add a member" not in content and "Remove" not in content


def test_the_members_api_lists_adds_changes_and_removes(api_as, alice, bob, dana):
    client = api_as(alice)
    listed = client.get("/api/v1/tenants/team-a/members/").json()
    assert [(m["username"], m["role"]) for m in listed] == [
        ("alice", "tenant_admin"),
        ("bob", "member"),
    ]
    added = client.post("/api/v1/tenants/team-a/members/", {"username": "dana"}, format="json")
    assert added.status_code == 201 and added.json()["role"] == "member"
    changed = client.patch(
        "/api/v1/tenants/team-a/members/dana/", {"role": "tenant_admin"}, format="json"
    )
    assert changed.status_code == 200 and changed.json()["role"] == "tenant_admin"
    assert client.delete("/api/v1/tenants/team-a/members/dana/").status_code == 204
    assert not Membership.objects.filter(user=dana).exists()
    assert AuditEvent.objects.filter(object_type="portal.Membership").count() == 3


def test_the_members_api_answers_errors_per_field(api_as, alice, bob):
    client = api_as(alice)
    unknown = client.post("/api/v1/tenants/team-a/members/", {"username": "x"}, format="json")
    assert unknown.status_code == 400
    assert unknown.json()["error"]["fields"]["username"] == ["There is no user named “x”."]
    bad_role = client.patch("/api/v1/tenants/team-a/members/bob/", {"role": "king"}, format="json")
    assert "role" in bad_role.json()["error"]["fields"]
    demote = client.patch(
        "/api/v1/tenants/team-a/members/alice/", {"role": "member"}, format="json"
    )
    assert demote.status_code == 400
    assert "only tenant admin" in demote.json()["error"]["fields"]["role"][0]


def test_the_members_api_has_the_same_gates(api_as, client, alice, bob, carol):
    assert api_as(carol).get("/api/v1/tenants/team-a/members/").status_code == 404
    assert api_as(carol).delete("/api/v1/tenants/team-a/members/bob/").status_code == 404
    assert api_as(bob).get("/api/v1/tenants/team-a/members/").status_code == 200
    add = api_as(bob).post("/api/v1/tenants/team-a/members/", {"username": "carol"}, format="json")
    assert add.status_code == 403
    assert api_as(bob).delete("/api/v1/tenants/team-a/members/alice/").status_code == 403
    assert client.get("/api/v1/tenants/team-a/members/").status_code in (401, 403)
    assert Membership.objects.filter(tenant__slug="team-a").count() == 2


def test_the_members_api_is_documented(client_as, alice):
    paths = client_as(alice).get("/api/schema/?format=json").json()["paths"]
    assert set(paths["/api/v1/tenants/{slug}/members/"]) >= {"get", "post"}
    assert set(paths["/api/v1/tenants/{slug}/members/{username}/"]) >= {"get", "patch", "delete"}


# session, user, the tenant (gate), whether the user administers it, the members with users.
@pytest.mark.parametrize(("who", "queries"), [("alice", 5), ("bob", 5)])
def test_the_members_page_costs_a_fixed_number_of_queries(
    client_as, request, alice, bob, team_a, django_assert_num_queries, who, queries
):
    for _ in range(5):
        set_member(actor=alice, tenant=team_a, user=UserFactory(), role="member")
    client = client_as(request.getfixturevalue(who))
    client.get("/tenants/team-a/members/")
    with django_assert_num_queries(queries):
        assert client.get("/tenants/team-a/members/").status_code == 200


def test_a_tenant_cannot_take_the_slug_of_the_new_tenant_page(root):
    from portal.services.tenants import save_tenant

    with pytest.raises(ValidationError) as error:
        save_tenant(actor=root, tenant=None, name="New", slug="new")
    assert "reserved" in str(error.value.message_dict["slug"])
