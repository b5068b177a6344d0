"""The audit log as CSV (/audit/export.csv) and the same filters on /api/v1/audit-events/."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

import pytest

from portal.models import AuditEvent
from portal.views.audit import CSV_COLUMNS, csv_safe

pytestmark = pytest.mark.django_db


def record(*, when: dt.datetime, **fields) -> AuditEvent:
    defaults = {"action": AuditEvent.Action.UPDATED, "object_type": "portal.Tenant"}
    event = AuditEvent.objects.create(**{**defaults, **fields})
    AuditEvent.objects.filter(pk=event.pk).update(created_at=when)
    return event


@pytest.fixture
def trail(alice, root, team_a, team_b):
    record(
        when=dt.datetime(2025, 3, 1, 9, 30, 15, 123456, tzinfo=dt.UTC),
        actor=root,
        actor_name="root",
        tenant=team_a,
        object_type="portal.Quota",
        object_id=str(team_a.quotas.get().pk),
        object_repr="Team A: gpu.nvidia.com",
        before={"max_devices": 8},
        after={"max_devices": 4},
    )
    record(
        when=dt.datetime(2025, 3, 2, 10, tzinfo=dt.UTC),
        actor=alice,
        actor_name="alice",
        action=AuditEvent.Action.CLAIM_REQUESTED,
        tenant=team_a,
        object_type="claims.ClaimRequest",
        object_id="3f0c6d1e-8d5a-4c57-9a43-2f1d6f7c9b10",
        object_repr="team-a-dev/training-run",
        after={"state": "pending"},
    )
    record(
        when=dt.datetime(2025, 3, 3, 11, tzinfo=dt.UTC),
        actor_name="root",
        tenant=team_b,
        object_repr="Team B secret project",
    )


def download(client, query: str = "") -> list[list[str]]:
    response = client.get(f"/audit/export.csv{query}")
    assert response.status_code == 200, response.status_code
    assert response.streaming
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"].startswith('attachment; filename="audit-log-')
    text = b"".join(response.streaming_content).decode()
    return list(csv.reader(io.StringIO(text)))


def test_the_export_has_a_header_and_one_row_per_event_newest_first(client_as, root, trail):
    rows = download(client_as(root))
    assert rows[0] == CSV_COLUMNS
    assert [row[6] for row in rows[1:]] == [
        "Team B secret project",
        "team-a-dev/training-run",
        "Team A: gpu.nvidia.com",
    ]
    quota = dict(zip(CSV_COLUMNS, rows[3], strict=True))
    assert quota["time"] == "2025-03-01T09:30:15Z"
    assert (quota["actor"], quota["action"], quota["tenant"]) == ("root", "updated", "team-a")
    assert quota["object_type"] == "portal.Quota"
    assert json.loads(quota["before"]) == {"max_devices": 8}
    assert json.loads(quota["after"]) == {"max_devices": 4}
    claim = dict(zip(CSV_COLUMNS, rows[2], strict=True))
    assert claim["before"] == ""  # nothing before a creation
    assert claim["object_id"] == "3f0c6d1e-8d5a-4c57-9a43-2f1d6f7c9b10"


def test_the_export_honours_the_filters(client_as, root, trail):
    rows = download(client_as(root), "?actor=alice")
    assert [row[6] for row in rows[1:]] == ["team-a-dev/training-run"]
    rows = download(client_as(root), "?tenant=team-a&until=2025-03-01")
    assert [row[6] for row in rows[1:]] == ["Team A: gpu.nvidia.com"]
    rows = download(client_as(root), "?object=secret&since=2025-03-02")
    assert [row[6] for row in rows[1:]] == ["Team B secret project"]


def test_a_tenant_admin_exports_only_her_tenants_events(client_as, alice, trail):
    rows = download(client_as(alice))
    assert len(rows) == 3
    assert {row[3] for row in rows[1:]} == {"team-a"}


def test_exporting_another_tenant_is_refused_not_widened(client_as, alice, trail):
    response = client_as(alice).get("/audit/export.csv?tenant=team-b")
    assert response.status_code == 400
    assert b"tenant: Select a valid choice" in response.content
    assert b"secret" not in response.content


def test_members_are_refused_and_visitors_sent_to_the_login(client, client_as, bob, carol, trail):
    for member in (bob, carol):
        response = client_as(member).get("/audit/export.csv")
        assert response.status_code == 403
        assert b"The audit log is for tenant admins and portal admins" in response.content
    response = client.get("/audit/export.csv")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_cells_a_spreadsheet_would_run_as_formulas_are_quoted(client_as, root, team_a):
    record(
        when=dt.datetime(2025, 3, 1, tzinfo=dt.UTC),
        actor_name="@mallory",
        tenant=team_a,
        object_id="-1",
        object_repr='=HYPERLINK("http://evil.example","click")',
    )
    rows = download(client_as(root))
    row = dict(zip(CSV_COLUMNS, rows[1], strict=True))
    assert row["object"] == '\'=HYPERLINK("http://evil.example","click")'
    assert row["actor"] == "'@mallory"
    assert row["object_id"] == "'-1"
    assert row["tenant"] == "team-a"


@pytest.mark.parametrize(
    ("value", "safe"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("plain", "plain"),
        ("a=b", "a=b"),
        ("", ""),
    ],
)
def test_csv_safe_quotes_only_formula_starts(value, safe):
    assert csv_safe(value) == safe


def test_the_page_offers_the_export_with_the_current_filters(client_as, alice, trail):
    content = client_as(alice).get("/audit/?action=claim_requested").content.decode()
    assert 'href="/audit/export.csv?action=claim_requested"' in content


# -- the same FilterSet on the API ------------------------------------------------------------


def listed(api, query: str) -> list[str]:
    response = api.get(f"/api/v1/audit-events/{query}")
    assert response.status_code == 200, response.json()
    return [event["object_repr"] for event in response.json()["results"]]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?actor=alice", ["team-a-dev/training-run"]),
        ("?action=claim_requested", ["team-a-dev/training-run"]),
        ("?tenant=team-b", ["Team B secret project"]),
        ("?object_type=portal.Quota", ["Team A: gpu.nvidia.com"]),
        ("?object=3f0c6d1e-8d5a-4c57-9a43-2f1d6f7c9b10", ["team-a-dev/training-run"]),
        ("?object=secret", ["Team B secret project"]),
        ("?since=2025-03-02&until=2025-03-02", ["team-a-dev/training-run"]),
        ("?since=2025-03-02T10:00:00Z", ["Team B secret project", "team-a-dev/training-run"]),
        ("?until=2025-03-01T09:30:15.123456%2B00:00", ["Team A: gpu.nvidia.com"]),
    ],
)
def test_the_api_takes_the_same_filters(api_as, root, trail, query, expected):
    assert listed(api_as(root), query) == expected


def test_the_api_is_scoped_and_refuses_another_tenant_as_a_filter(api_as, alice, bob, trail):
    assert len(listed(api_as(alice), "")) == 2
    response = api_as(alice).get("/api/v1/audit-events/?tenant=team-b")
    assert response.status_code == 400
    assert "tenant" in json.dumps(response.json())
    assert listed(api_as(bob), "") == []


def test_the_api_refuses_malformed_filters(api_as, root, trail):
    for query in ("?since=yesterday", "?action=exploded", "?actor=a&actor=b"):
        assert api_as(root).get(f"/api/v1/audit-events/{query}").status_code == 400, query
