"""The identity provider's memberships follow the person's groups at each sign-in; memberships
added in the portal are never touched."""

from __future__ import annotations

import pytest

from portal.models import AuditEvent, Membership
from portal.services.tenants import LastTenantAdminError, remove_member, sync_provider_memberships
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

IDP = Membership.Source.IDENTITY_PROVIDER


def memberships(user):
    return {
        (m.tenant.slug, m.role, m.source)
        for m in Membership.objects.filter(user=user).select_related("tenant")
    }


def test_it_adds_changes_and_removes_the_providers_memberships(team_a, team_b):
    dana = UserFactory(username="dana")
    sync_provider_memberships(
        user=dana, roles={team_a: Membership.Role.MEMBER, team_b: Membership.Role.TENANT_ADMIN}
    )
    assert memberships(dana) == {
        ("team-a", "member", IDP),
        ("team-b", "tenant_admin", IDP),
    }

    sync_provider_memberships(user=dana, roles={team_a: Membership.Role.TENANT_ADMIN})
    assert memberships(dana) == {("team-a", "tenant_admin", IDP)}

    sync_provider_memberships(user=dana, roles={})
    assert memberships(dana) == set()


def test_it_never_touches_a_membership_added_in_the_portal(team_a, team_b):
    dana = UserFactory(username="dana")
    MembershipFactory(user=dana, tenant=team_a, role=Membership.Role.MEMBER)
    sync_provider_memberships(user=dana, roles={team_a: Membership.Role.TENANT_ADMIN})
    assert memberships(dana) == {("team-a", "member", Membership.Source.PORTAL)}
    sync_provider_memberships(user=dana, roles={})
    assert memberships(dana) == {("team-a", "member", Membership.Source.PORTAL)}


def test_saying_the_same_again_changes_and_records_nothing(team_a):
    dana = UserFactory(username="dana")
    sync_provider_memberships(user=dana, roles={team_a: Membership.Role.MEMBER})
    events = AuditEvent.objects.count()
    sync_provider_memberships(user=dana, roles={team_a: Membership.Role.MEMBER})
    assert AuditEvent.objects.count() == events


def test_each_change_is_audited_as_the_providers(team_a):
    dana = UserFactory(username="dana")
    sync_provider_memberships(user=dana, roles={team_a: Membership.Role.TENANT_ADMIN})
    sync_provider_memberships(user=dana, roles={})
    added, removed = AuditEvent.objects.filter(object_type="portal.Membership").order_by("pk")
    assert (added.action, added.actor, added.tenant) == (AuditEvent.Action.CREATED, None, team_a)
    assert added.after == {"user": "dana", "role": "tenant_admin", "source": "identity_provider"}
    assert removed.action == AuditEvent.Action.DELETED
    assert removed.before == {"user": "dana", "role": "tenant_admin"}


def test_the_provider_may_take_a_tenants_last_admin_away(team_b):
    dana = UserFactory(username="dana")
    sync_provider_memberships(user=dana, roles={team_b: Membership.Role.TENANT_ADMIN})
    sync_provider_memberships(user=dana, roles={team_b: Membership.Role.MEMBER})
    assert memberships(dana) == {("team-b", "member", IDP)}
    sync_provider_memberships(user=dana, roles={})
    assert not Membership.objects.filter(tenant=team_b, role="tenant_admin").exists()


def test_people_in_the_portal_still_keep_a_tenant_admin(alice):
    with pytest.raises(LastTenantAdminError):
        remove_member(actor=None, membership=alice.memberships.get())


def test_the_members_page_marks_the_providers_memberships(client_as, alice, team_a):
    dana = UserFactory(username="dana")
    sync_provider_memberships(user=dana, roles={team_a: Membership.Role.MEMBER})
    content = client_as(alice).get("/tenants/team-a/members/").content.decode()
    assert content.count('data-testid="from-identity-provider"') == 1
