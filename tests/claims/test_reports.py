"""Allocation-hours reports: sums checked against a hand-computed history.

The history (``history`` fixture), period 1–8 March 2026 (UTC), reported at ``NOW`` (10 March):

- team-a, team-a-dev: 2 H100 (80 GiB) × 3 h inside the period → 6 h, 480 GiB·h
- team-a, gpu-test1: 1 H100 from 28 Feb 22:00 to 1 Mar 04:00, straddling the start → 4 h, 320
- team-b, team-b-prod: 1 A100 (40 GiB) held since 7 Mar 12:00, still open → 12 h to the end, 480
- a deleted tenant ("Old Team"), old-ns: 1 MIG slice (10 GiB, no model) × 1.5 h → 1.5 h, 15
- excluded: an admin-access record in the period, one before it, one after it
"""

from __future__ import annotations

import datetime

import pytest

from claims.models import AllocationRecord
from claims.usage.reports import (
    GroupBy,
    Period,
    PeriodError,
    Preset,
    allocation_hours,
    csv_rows,
    resolve_period,
)

pytestmark = pytest.mark.django_db

UTC = datetime.UTC
GIB = 2**30
H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-40GB"
PERIOD = Period(
    datetime.datetime(2026, 3, 1, tzinfo=UTC), datetime.datetime(2026, 3, 8, tzinfo=UTC)
)
NOW = datetime.datetime(2026, 3, 10, tzinfo=UTC)


def at(day: int, hour: float = 0, month: int = 3) -> datetime.datetime:
    return datetime.datetime(2026, month, day, tzinfo=UTC) + datetime.timedelta(hours=hour)


def record(tenant, namespace, start, end, *, n=0, **fields) -> AllocationRecord:
    values = {
        "claim_uid": f"uid-{namespace}-{n}",
        "namespace": namespace,
        "claim_name": f"claim-{n}",
        "tenant": tenant,
        "tenant_name": tenant.name if tenant else "",
        "tenant_slug": tenant.slug if tenant else "",
        "request": "gpu",
        "device_class": "gpu.nvidia.com",
        "driver": "gpu.nvidia.com",
        "pool": "node-1",
        "device_name": f"gpu-{n}",
        "model_name": H100,
        "memory_bytes": 80 * GIB,
        "started_at": start,
        "ended_at": end,
        **fields,
    }
    return AllocationRecord.objects.create(**values)


def make_history(team_a, team_b) -> None:
    record(team_a, "team-a-dev", at(2, 10), at(2, 13), n=0)
    record(team_a, "team-a-dev", at(2, 10), at(2, 13), n=1)
    record(team_a, "gpu-test1", at(28, 22, month=2), at(1, 4), n=2)
    record(team_b, "team-b-prod", at(7, 12), None, model_name=A100, memory_bytes=40 * GIB)
    record(
        None,
        "old-ns",
        at(5, 0),
        at(5, 1.5),
        tenant_name="Old Team",
        tenant_slug="old-team",
        device_class="mig.nvidia.com",
        model_name="",
        memory_bytes=10 * GIB,
    )
    record(team_a, "team-a-dev", at(3, 0), at(3, 10), n=3, admin_access=True)
    record(team_a, "team-a-dev", at(20, 0, month=2), at(21, 0, month=2), n=4)
    record(team_a, "team-a-dev", at(9, 0), None, n=5)


@pytest.fixture
def history(team_a, team_b):
    make_history(team_a, team_b)


def sums(group_by, records=None, period=PERIOD, now=NOW):
    report = allocation_hours(
        records if records is not None else AllocationRecord.objects.all(),
        period,
        group_by,
        now=now,
    )
    return {row.label: (row.device_hours, row.memory_gib_hours) for row in report.rows}, report


@pytest.mark.parametrize(
    ("group_by", "expected"),
    [
        (
            GroupBy.TENANT,
            {"Team A": (10.0, 800.0), "Team B": (12.0, 480.0), "Old Team": (1.5, 15.0)},
        ),
        (
            GroupBy.NAMESPACE,
            {
                "team-a-dev": (6.0, 480.0),
                "gpu-test1": (4.0, 320.0),
                "team-b-prod": (12.0, 480.0),
                "old-ns": (1.5, 15.0),
            },
        ),
        (GroupBy.DEVICE_CLASS, {"gpu.nvidia.com": (22.0, 1280.0), "mig.nvidia.com": (1.5, 15.0)}),
        (GroupBy.MODEL, {H100: (10.0, 800.0), A100: (12.0, 480.0), "(unknown model)": (1.5, 15.0)}),
    ],
)
def test_it_sums_the_hours_each_group_held_inside_the_period(history, group_by, expected):
    rows, report = sums(group_by)
    assert rows == expected
    assert (report.device_hours, report.memory_gib_hours) == (23.5, 1295.0)


def test_rows_come_largest_first(history):
    _, report = sums(GroupBy.TENANT)
    assert [row.label for row in report.rows] == ["Team B", "Team A", "Old Team"]
    assert [row.label for row in report.sorted_by("group")] == ["Old Team", "Team A", "Team B"]
    assert [row.label for row in report.sorted_by("-hours")][0] == "Old Team"
    assert report.sorted_by("memory")[0].label == "Team A"


def test_open_records_count_up_to_now(history):
    rows, _ = sums(GroupBy.TENANT, now=at(7, 18))
    assert rows["Team B"] == (6.0, 240.0)


def test_admin_access_records_are_left_out(team_a, team_b):
    record(team_a, "team-a-dev", at(3, 0), at(3, 10), admin_access=True)
    rows, report = sums(GroupBy.TENANT)
    assert rows == {}
    assert report.rows == []


def test_a_renamed_tenant_reports_under_its_current_name(history, team_a):
    team_a.name = "Team Alpha"
    team_a.save()
    rows, _ = sums(GroupBy.TENANT)
    assert rows["Team Alpha"] == (10.0, 800.0)


def test_a_user_sees_only_the_records_of_their_tenants(history, alice, carol, root):
    alice_rows, _ = sums(GroupBy.TENANT, AllocationRecord.objects.visible_to(alice))
    carol_rows, _ = sums(GroupBy.TENANT, AllocationRecord.objects.visible_to(carol))
    root_rows, _ = sums(GroupBy.TENANT, AllocationRecord.objects.visible_to(root))
    assert alice_rows == {"Team A": (10.0, 800.0)}
    assert carol_rows == {"Team B": (12.0, 480.0)}
    assert set(root_rows) == {"Team A", "Team B", "Old Team"}


def test_a_period_in_the_future_holds_nothing(history):
    rows, _ = sums(GroupBy.TENANT, period=Period(at(11), at(12)), now=NOW)
    assert rows == {}


def test_the_csv_has_one_row_per_group_with_the_period(history):
    _, report = sums(GroupBy.NAMESPACE)
    lines = list(csv_rows(report))
    assert lines[0] == [
        "group",
        "device_hours",
        "memory_gib_hours",
        "allocations",
        "group_by",
        "period_start",
        "period_end",
    ]
    assert lines[1] == [
        "team-b-prod",
        "12.000",
        "480.000",
        "1",
        "namespace",
        "2026-03-01T00:00:00+00:00",
        "2026-03-08T00:00:00+00:00",
    ]
    assert [line[0] for line in lines[1:]] == ["team-b-prod", "team-a-dev", "gpu-test1", "old-ns"]


def test_custom_dates_include_the_end_day():
    period = resolve_period(start="2026-03-01", end="2026-03-07")
    assert period == PERIOD


def test_presets_cover_whole_months_and_recent_days():
    now = datetime.datetime(2026, 3, 15, 12, tzinfo=UTC)
    assert resolve_period(Preset.THIS_MONTH, now=now) == Period(at(1), at(1, month=4))
    assert resolve_period(Preset.LAST_MONTH, now=now) == Period(at(1, month=2), at(1))
    assert resolve_period(Preset.LAST_7_DAYS, now=now) == Period(at(8, 12), now)
    assert resolve_period(now=now) == Period(at(13, 12, month=2), now)


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        ("2026-03-08", "2026-03-01", "must come after its start"),
        ("2025-01-01", "2026-03-01", "at most 400 days"),
        ("yesterday", "2026-03-01", "not a date"),
        ("2026-03-01", "", "both a start and an end"),
    ],
)
def test_it_refuses_a_period_it_cannot_report_on(start, end, message):
    with pytest.raises(PeriodError, match=message):
        resolve_period(start=start, end=end)
