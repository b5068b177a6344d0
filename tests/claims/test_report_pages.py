"""The allocation-hours page, its CSV export and its API: each user sees their tenants' hours
(members included), portal admins every tenant's, anonymous visitors nothing.

Uses the hand-computed history of ``test_reports`` (1–7 March 2026, both days included).
"""

from __future__ import annotations

import csv
import io

import pytest

from tests.claims.test_reports import A100, H100, make_history

pytestmark = pytest.mark.django_db

PAGE = "/reports/"
API = "/api/v1/reports/allocation-hours/"
MARCH = "period=custom&from=2026-03-01&to=2026-03-07"


@pytest.fixture
def history(team_a, team_b):
    make_history(team_a, team_b)


def table(response) -> dict[str, tuple[str, str]]:
    return {
        row.label: (row.device_hours_display, row.memory_gib_hours_display)
        for row in response.context["rows"]
    }


def test_anonymous_visitors_are_sent_to_sign_in(client, history):
    assert client.get(PAGE)["Location"].startswith("/login/")
    assert client.get(f"{PAGE}?{MARCH}&format=csv")["Location"].startswith("/login/")
    assert client.get(f"{API}?from=2026-03-01&to=2026-03-07").status_code in (401, 403)


@pytest.mark.parametrize("persona", ["alice", "bob"])
def test_a_team_sees_only_its_own_hours(client_as, personas, history, persona):
    response = client_as(personas[persona]).get(f"{PAGE}?{MARCH}&group_by=namespace")
    assert response.status_code == 200
    assert table(response) == {"team-a-dev": ("6.0", "480.0"), "gpu-test1": ("4.0", "320.0")}
    assert b"team-b-prod" not in response.content


def test_another_tenant_sees_none_of_team_a_hours(client_as, carol, history):
    response = client_as(carol).get(f"{PAGE}?{MARCH}&group_by=model")
    assert table(response) == {A100: ("12.0", "480.0")}
    assert H100.encode() not in response.content


def test_portal_admins_see_every_tenant_with_a_total(client_as, root, history):
    response = client_as(root).get(f"{PAGE}?{MARCH}")
    assert table(response) == {
        "Team B": ("12.0", "480.0"),
        "Team A": ("10.0", "800.0"),
        "Old Team": ("1.5", "15.0"),
    }
    content = response.content.decode()
    assert "1,295.0" in content  # the totals row, with thousands separators
    assert "1 Mar 2026 – 7 Mar 2026" in content


def test_the_table_sorts_by_the_column_asked_for(client_as, root, history):
    response = client_as(root).get(f"{PAGE}?{MARCH}&sort=memory")
    assert [row.label for row in response.context["rows"]] == ["Team A", "Team B", "Old Team"]
    response = client_as(root).get(f"{PAGE}?{MARCH}&sort=-hours")
    assert [row.label for row in response.context["rows"]] == ["Old Team", "Team A", "Team B"]


def test_the_chart_is_an_inline_svg_with_a_title_per_bar(client_as, root, history):
    content = client_as(root).get(f"{PAGE}?{MARCH}").content.decode()
    assert '<svg class="w-100 h-auto"' in content
    assert "<title>Team B: 12.0 device-hours, 480.0 memory GiB-hours</title>" in content
    assert "<script" not in content.split('data-testid="report-chart"')[1].split("</svg>")[0]


def test_the_csv_export_has_the_same_rows_as_the_page(client_as, alice, history):
    response = client_as(alice).get(f"{PAGE}?{MARCH}&group_by=namespace&format=csv")
    assert response["Content-Type"].startswith("text/csv")
    assert (
        "allocation-hours-namespace-2026-03-01-to-2026-03-07.csv"
        in (response["Content-Disposition"])
    )
    lines = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert lines == [
        [
            "group",
            "device_hours",
            "memory_gib_hours",
            "allocations",
            "group_by",
            "period_start",
            "period_end",
        ],
        [
            "team-a-dev",
            "6.000",
            "480.000",
            "2",
            "namespace",
            "2026-03-01T00:00:00+00:00",
            "2026-03-08T00:00:00+00:00",
        ],
        [
            "gpu-test1",
            "4.000",
            "320.000",
            "1",
            "namespace",
            "2026-03-01T00:00:00+00:00",
            "2026-03-08T00:00:00+00:00",
        ],
    ]


def test_a_period_with_no_allocations_says_so(client_as, alice, history):
    response = client_as(alice).get("/reports/?from=2026-01-01&to=2026-01-31")
    assert response.status_code == 200
    assert b"No allocations in this period" in response.content


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("from=2026-03-08&to=2026-03-01", "must come after its start"),
        ("from=2025-01-01&to=2026-03-01", "at most 400 days"),
        ("period=custom", "Choose the dates of a custom period"),
        ("group_by=colour", "Select a valid choice"),
    ],
)
def test_a_bad_period_is_refused_with_the_reason(client_as, alice, history, query, message):
    response = client_as(alice).get(f"{PAGE}?{query}")
    assert response.status_code == 400
    assert message in response.content.decode()


def test_the_presets_need_no_dates(client_as, alice, history):
    for preset in ("last-7-days", "last-30-days", "this-month", "last-month"):
        assert client_as(alice).get(f"{PAGE}?period={preset}").status_code == 200


def test_the_page_costs_a_fixed_number_of_queries(
    client_as, root, alice, history, django_assert_num_queries
):
    admin, member = client_as(root), client_as(alice)
    # session, user, the report's one aggregate query, utilisation per tenant
    with django_assert_num_queries(4):
        admin.get(f"{PAGE}?{MARCH}")
    # a member's gate is a subquery of the same query; the navigation asks once (then caches
    # it) whether the member administers a tenant
    with django_assert_num_queries(4):
        member.get(f"{PAGE}?{MARCH}&group_by=model")


def test_the_navigation_links_the_reports(client_as, bob):
    assert b'href="/reports/"' in client_as(bob).get("/").content


# -- API ----------------------------------------------------------------------------------------


def test_the_api_reports_a_teams_hours(api_as, alice, history):
    body = api_as(alice).get(f"{API}?from=2026-03-01&to=2026-03-07&group_by=tenant").json()
    assert body == {
        "period_start": "2026-03-01T00:00:00Z",
        "period_end": "2026-03-08T00:00:00Z",
        "group_by": "tenant",
        "rows": [
            {
                "group": "team-a",
                "label": "Team A",
                "device_hours": 10.0,
                "memory_gib_hours": 800.0,
                "allocations": 3,
            }
        ],
        "device_hours": 10.0,
        "memory_gib_hours": 800.0,
    }


def test_the_api_scopes_like_the_page(api_as, carol, root, history):
    carol_rows = api_as(carol).get(f"{API}?from=2026-03-01&to=2026-03-07").json()["rows"]
    root_rows = api_as(root).get(f"{API}?from=2026-03-01&to=2026-03-07").json()["rows"]
    assert [row["group"] for row in carol_rows] == ["team-b"]
    assert [row["group"] for row in root_rows] == ["team-b", "team-a", "old-team"]


def test_the_api_refuses_a_bad_period_with_the_reason(api_as, alice, history):
    response = api_as(alice).get(f"{API}?from=2026-03-08&to=2026-03-01")
    assert response.status_code == 400
    assert "must come after its start" in str(response.json())
    assert api_as(alice).get(f"{API}?group_by=colour").status_code == 400


def test_the_api_is_documented(api_as, root):
    schema = api_as(root).get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "/api/v1/reports/allocation-hours/" in schema


def test_tenants_and_namespaces_show_the_utilisation_of_what_they_held(client_as, alice, history):
    import datetime

    from claims.models import UsageRollup

    for hour, util in ((0, 80.0), (1, 40.0)):
        UsageRollup.objects.create(
            scope="namespace",
            key="team-a-dev",
            resolution="1h",
            bucket_start=datetime.datetime(2026, 3, 2, hour, tzinfo=datetime.UTC),
            device_seconds=3600 * (hour + 1),
            gpu_util_avg=util,
        )

    response = client_as(alice).get(f"{PAGE}?{MARCH}&group_by=namespace")

    utilisation = {row.label: row.gpu_util for row in response.context["rows"]}
    assert utilisation == {
        "team-a-dev": pytest.approx((80 * 1 + 40 * 2) / 3, abs=0.05),
        "gpu-test1": None,
    }
    assert b"GPU utilisation" in response.content
    by_model = client_as(alice).get(f"{PAGE}?{MARCH}&group_by=model")
    assert b"GPU utilisation" not in by_model.content
