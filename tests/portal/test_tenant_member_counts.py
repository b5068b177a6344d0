"""A tenant's member count is the same whoever looks: its tenant admin, a member and a portal
admin all see every member, on the list page and wherever tenants are counted."""

from __future__ import annotations

import pytest
from django.db.models import Count

from portal.models import Tenant

pytestmark = pytest.mark.django_db


def _member_counts(client) -> dict[str, int]:
    table = client.get("/tenants/").context["table"]
    return {row.record.slug: row.record.member_count for row in table.rows}


def test_every_viewer_sees_every_member_of_team_a(client_as, alice, bob, carol, root, team_a):
    assert team_a.memberships.count() == 2
    assert _member_counts(client_as(alice)) == {"team-a": 2}
    assert _member_counts(client_as(bob)) == {"team-a": 2}
    assert _member_counts(client_as(root))["team-a"] == 2


def test_the_visible_and_administered_tenants_count_every_member(alice, bob, team_a):
    for tenants in (Tenant.objects.visible_to(bob), Tenant.objects.administered_by(alice)):
        counted = tenants.annotate(members=Count("memberships")).get()
        assert (counted.slug, counted.members) == ("team-a", 2)
