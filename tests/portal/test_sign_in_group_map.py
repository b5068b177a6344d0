"""OIDC_GROUP_MAP: identity-provider groups → tenant slug + role, refused at start when wrong."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from portal.models import Membership
from portal.sign_in.groups import (
    ROLES,
    GroupGrant,
    groups_from_claims,
    parse_group_map,
    roles_for_groups,
)


def test_the_compact_form_maps_groups_to_tenants_and_roles():
    assert parse_group_map(" team-a-admins = team-a:tenant_admin, team-b=team-b ,") == {
        "team-a-admins": (GroupGrant("team-a", "tenant_admin"),),
        "team-b": (GroupGrant("team-b", "member"),),
    }


def test_the_json_form_takes_any_group_name_and_several_tenants():
    parsed = parse_group_map(
        '{"cn=gpu,ou=groups,dc=example": ["team-a", "team-b:tenant_admin"], "/ops": "team-c"}'
    )
    assert parsed == {
        "cn=gpu,ou=groups,dc=example": (
            GroupGrant("team-a", "member"),
            GroupGrant("team-b", "tenant_admin"),
        ),
        "/ops": (GroupGrant("team-c", "member"),),
    }


def test_nothing_set_maps_nothing():
    assert parse_group_map("") == {}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("team-a-admins", "entry 'team-a-admins' is not group=tenant-slug[:role]"),
        ("team-a-admins=team-a:owner", "role 'owner' is not one of member, tenant_admin"),
        ("ops=Team A", "'Team A' is not a tenant slug"),
        ("ops=team-a, ops=team-a:tenant_admin", "group 'ops' names tenant 'team-a' twice"),
        ('{"ops": 3}', "expected 'tenant-slug[:role]', got 3"),
        ('{"ops": "team-a"', "OIDC_GROUP_MAP is not valid JSON"),
        ('{"ops": []}', "maps a group to nothing"),
        ("=team-a", "entry '=team-a' is not group=tenant-slug[:role]"),
    ],
)
def test_a_bad_mapping_is_refused_naming_the_entry(raw, message):
    with pytest.raises(ImproperlyConfigured, match="OIDC_GROUP_MAP") as error:
        parse_group_map(raw)
    assert message in str(error.value)


def test_the_roles_are_the_memberships_roles():
    assert set(ROLES) == set(Membership.Role.values)


def test_the_stronger_role_wins_when_two_groups_name_one_tenant():
    group_map = parse_group_map("a=team-a, a-admins=team-a:tenant_admin, b=team-b")
    assert roles_for_groups(["a", "a-admins", "b", "other"], group_map) == {
        "team-a": "tenant_admin",
        "team-b": "member",
    }
    assert roles_for_groups(["a-admins", "a"], group_map) == {"team-a": "tenant_admin"}
    assert roles_for_groups(["other"], group_map) == {}


def test_groups_are_read_from_a_list_a_string_or_a_nested_claim():
    assert groups_from_claims({"groups": ["b", "a", "a", 7]}, "groups") == ["a", "b"]
    assert groups_from_claims({"groups": "ops"}, "groups") == ["ops"]
    assert groups_from_claims({"realm_access": {"roles": ["x"]}}, "realm_access.roles") == ["x"]
    assert groups_from_claims({"groups": {"not": "a list"}}, "groups") == []
    assert groups_from_claims({}, "groups") == []
