"""The audit log page (/audit/): who sees which events, its filters, links, changes, pages."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from portal.models import AuditEvent
from portal.services.tenants import save_quota

pytestmark = pytest.mark.django_db

CLAIM_REQUEST_ID = uuid.UUID("3f0c6d1e-8d5a-4c57-9a43-2f1d6f7c9b10")


def at(day: int, hour: int = 12) -> dt.datetime:
    return dt.datetime(2025, 3, day, hour, tzinfo=dt.UTC)


def record(*, when: dt.datetime | None = None, **fields) -> AuditEvent:
    defaults = {"action": AuditEvent.Action.UPDATED, "object_type": "portal.Tenant"}
    event = AuditEvent.objects.create(**{**defaults, **fields})
    if when is not None:
        AuditEvent.objects.filter(pk=event.pk).update(created_at=when)
        event.refresh_from_db()
    return event


@pytest.fixture
def trail(alice, carol, root, team_a, team_b):
    """team-a: a quota change by root, a claim request by alice; team-b: a change by root."""
    record(
        when=at(1),
        actor=root,
        actor_name="root",
        tenant=team_a,
        object_type="portal.Quota",
        object_id=str(team_a.quotas.get().pk),
        object_repr="Team A: gpu.nvidia.com",
        before={"max_devices": 8, "max_claims": None},
        after={"max_devices": 4, "max_claims": None},
    )
    record(
        when=at(2),
        actor=alice,
        actor_name="alice",
        action=AuditEvent.Action.CLAIM_REQUESTED,
        tenant=team_a,
        object_type="claims.ClaimRequest",
        object_id=str(CLAIM_REQUEST_ID),
        object_repr="team-a-dev/training-run",
        after={"state": "pending"},
    )
    record(
        when=at(3),
        actor=root,
        actor_name="root",
        tenant=team_b,
        object_type="portal.Tenant",
        object_id=str(team_b.pk),
        object_repr="Team B secret project",
        before={"name": "Team B"},
        after={"name": "Team B secret project"},
    )


def page(client, query: str = "", **headers) -> str:
    response = client.get(f"/audit/{query}", **headers)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def test_a_portal_admin_sees_every_tenants_events(client_as, root, trail):
    content = page(client_as(root))
    assert "Team A: gpu.nvidia.com" in content
    assert "team-a-dev/training-run" in content
    assert "Team B secret project" in content
    assert "3 events" in content


def test_a_tenant_admin_sees_only_her_tenants_events(client_as, alice, trail):
    content = page(client_as(alice))
    assert "Team A: gpu.nvidia.com" in content
    assert "team-a-dev/training-run" in content
    assert "Team B secret project" not in content
    assert "2 events" in content


def test_another_tenant_is_not_a_choice_and_filtering_by_it_shows_nothing(client_as, alice, trail):
    content = page(client_as(alice), "?tenant=team-b")
    assert 'data-testid="filter-errors"' in content
    assert "Select a valid choice" in content
    assert "Team B secret project" not in content
    assert "Team A: gpu.nvidia.com" not in content  # a refused filter is not a dropped filter
    assert '<option value="team-b"' not in content
    assert '<option value="team-a"' in content


def test_a_member_is_refused_with_a_reason(client_as, bob, trail):
    response = client_as(bob).get("/audit/")
    assert response.status_code == 403
    content = response.content.decode()
    assert "The audit log is for tenant admins and portal admins" in content
    assert "Team A: gpu.nvidia.com" not in content


def test_a_member_of_another_tenant_is_refused_too(client_as, carol, trail):
    assert client_as(carol).get("/audit/").status_code == 403


def test_anonymous_visitors_are_sent_to_the_login(client, trail):
    response = client.get("/audit/?tenant=team-a")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_a_portal_admin_sees_the_log_even_before_any_tenant_exists(client_as, root):
    content = page(client_as(root))
    assert "Nothing has been audited yet" in content


@pytest.mark.parametrize(
    ("query", "shown", "hidden"),
    [
        ("?actor=alice", "team-a-dev/training-run", "Team A: gpu.nvidia.com"),
        ("?actor=ROOT", "Team A: gpu.nvidia.com", "team-a-dev/training-run"),
        ("?action=claim_requested", "team-a-dev/training-run", "Team A: gpu.nvidia.com"),
        ("?tenant=team-b", "Team B secret project", "Team A: gpu.nvidia.com"),
        ("?object_type=portal.Quota", "Team A: gpu.nvidia.com", "Team B secret project"),
        (f"?object={CLAIM_REQUEST_ID}", "team-a-dev/training-run", "Team A: gpu.nvidia.com"),
        ("?object=SECRET", "Team B secret project", "team-a-dev/training-run"),
        ("?since=2025-03-03", "Team B secret project", "team-a-dev/training-run"),
        ("?until=2025-03-01", "Team A: gpu.nvidia.com", "team-a-dev/training-run"),
        (
            "?since=2025-03-02T00:00:00Z&until=2025-03-02T23:00:00Z",
            "training-run",
            "secret project",
        ),
    ],
)
def test_each_filter_narrows_the_list(client_as, root, trail, query, shown, hidden):
    content = page(client_as(root), query)
    assert shown in content
    assert hidden not in content


def test_until_a_date_takes_in_that_whole_day(client_as, root, trail):
    record(when=at(1, hour=23), actor_name="root", object_repr="late on the first")
    content = page(client_as(root), "?since=2025-03-01&until=2025-03-01")
    assert "late on the first" in content
    assert "Team A: gpu.nvidia.com" in content
    assert "team-a-dev/training-run" not in content


def test_a_malformed_date_is_a_form_error(client_as, root, trail):
    content = page(client_as(root), "?since=yesterday")
    assert "Enter a date (YYYY-MM-DD) or an ISO 8601 time." in content
    assert "Team A: gpu.nvidia.com" not in content


def test_objects_link_to_their_pages(client_as, root, team_a, trail):
    record(actor_name="root", action=AuditEvent.Action.DELETED, object_repr="Gone team")
    content = page(client_as(root))
    # A quota is shown on its tenant's page; a claim request has its own.
    assert '<a href="/tenants/team-a/">Team A: gpu.nvidia.com</a>' in content
    assert f'<a href="/claims/requests/{CLAIM_REQUEST_ID}/">team-a-dev/training-run</a>' in content
    assert '<a href="/tenants/team-b/">Team B secret project</a>' in content
    # A deleted tenant has no page any more.
    assert "Gone team" in content
    assert ">Gone team</a>" not in content


def test_changes_show_old_and_new_values_and_the_full_snapshots(client_as, root, trail):
    content = page(client_as(root), "?object_type=portal.Quota")
    assert "<code>max_devices</code>: " in content
    assert "8</span> → <span" in content
    assert "4</span>" in content
    assert "<code>max_claims</code>" not in content  # unchanged keys are left out
    assert "<details" in content
    assert "&quot;max_claims&quot;: null" in content  # the full JSON, escaped


def test_the_object_names_and_snapshots_are_escaped(client_as, root, team_a):
    record(
        tenant=team_a,
        object_repr="<script>alert(1)</script>",
        before={"name": "<b>old</b>"},
        after={"name": "<b>new</b>"},
    )
    content = page(client_as(root))
    assert "<script>alert(1)</script>" not in content
    assert "<b>new</b>" not in content
    assert "&lt;b&gt;new&lt;/b&gt;" in content


def test_events_recorded_by_the_services_appear(client_as, alice, root, team_a):
    quota = team_a.quotas.get()
    save_quota(
        actor=root,
        tenant=team_a,
        device_class_name=quota.device_class_name,
        previous=quota,
        max_devices=2,
        max_device_memory=quota.max_device_memory,
        max_claims=quota.max_claims,
        max_lease=quota.max_lease,
        approve_above_devices=quota.approve_above_devices,
        approve_above_memory=quota.approve_above_memory,
        approve_above_lease=quota.approve_above_lease,
        approve_over_quota=quota.approve_over_quota,
    )
    content = page(client_as(alice), "?actor=root&action=updated")
    assert "<code>max_devices</code>" in content
    assert "1 event " in content


def test_filter_changes_refresh_only_the_table_with_htmx(client_as, root, trail):
    response = client_as(root).get("/audit/?action=claim_requested", HTTP_HX_REQUEST="true")
    content = response.content.decode()
    assert "<html" not in content
    assert 'id="auditevent-table"' in content
    assert "team-a-dev/training-run" in content
    assert "Team A: gpu.nvidia.com" not in content
    assert response["Vary"] and "HX-Request" in response["Vary"]


def test_the_full_page_has_the_filter_form_and_an_export_that_keeps_the_filters(
    client_as, root, trail
):
    content = page(client_as(root), "?actor=root&action=updated&page=1")
    assert 'data-testid="filter-form"' in content
    assert 'name="object_type"' in content
    # the object types on the trail, by name
    assert '<option value="portal.Quota">Quota</option>' in content
    assert '<option value="claims.ClaimRequest">Claim request</option>' in content
    assert 'href="/audit/export.csv?actor=root&amp;action=updated"' in content


def test_the_list_is_paginated_with_a_bounded_page_size(client_as, root, team_a):
    for number in range(12):
        record(tenant=team_a, actor_name="root", object_repr=f"event number {number:02}")
    content = page(client_as(root), "?per_page=5")
    assert "Page 1 of 3" in content
    assert "event number 11" in content  # newest first
    assert "event number 06" not in content
    assert "Page 3 of 3" in page(client_as(root), "?per_page=5&page=3")
    assert "Page 1 of 1" not in page(client_as(root), "?per_page=100000")  # a default page


def test_a_filter_that_matches_nothing_says_so(client_as, root, trail):
    content = page(client_as(root), "?actor=nobody")
    assert "No event matches these filters" in content


def test_the_navigation_offers_the_audit_log_to_admins_only(client_as, alice, bob, root):
    assert 'href="/audit/"' in page(client_as(root), "")
    assert 'href="/audit/"' in client_as(alice).get("/tenants/").content.decode()
    assert 'href="/audit/"' not in client_as(bob).get("/tenants/").content.decode()


def _many_events(team_a, team_b, count: int) -> None:
    for number in range(count):
        record(
            tenant=team_a if number % 2 else team_b,
            actor_name="root",
            object_type="portal.Quota" if number % 3 else "claims.ClaimRequest",
            object_id=str(uuid.uuid4()),
            object_repr=f"row {number}",
            before={"max_devices": number},
            after={"max_devices": number + 1},
        )


def test_the_query_count_does_not_grow_with_events(
    client_as, alice, root, team_a, team_b, django_assert_num_queries
):
    admin, tenant_admin = client_as(root), client_as(alice)
    _many_events(team_a, team_b, 3)
    # session, user, count, page, the object types and the tenants of the filter form
    with django_assert_num_queries(6):
        admin.get("/audit/")
    # plus the gate and the navigation's "is a tenant admin"
    with django_assert_num_queries(8):
        tenant_admin.get("/audit/")
    # session, user, the tenant filter's lookup, count, page
    with django_assert_num_queries(5):
        admin.get("/audit/?tenant=team-a", HTTP_HX_REQUEST="true")
    _many_events(team_a, team_b, 40)
    with django_assert_num_queries(6):
        admin.get("/audit/")
    # the navigation's "is a tenant admin" is cached now
    with django_assert_num_queries(7):
        tenant_admin.get("/audit/")
    with django_assert_num_queries(5):
        admin.get("/audit/?tenant=team-a", HTTP_HX_REQUEST="true")
