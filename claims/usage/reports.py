"""Allocation hours: what each tenant, namespace, device class or GPU model held over a period
(the chargeback view), from the allocation history (``claims.AllocationRecord``).

A record counts for the part of ``[started_at, ended_at or now]`` that falls inside the period:
device-hours are those durations summed, device-memory-GiB-hours the same weighted by each
device's memory. Admin-access records are left out: they observe a device without holding it,
and count against no quota either. The sums run in the database (``Greatest``/``Least`` over
the record's bounds, one ``SUM`` per group and memory size) on PostgreSQL and SQLite alike;
Python only weighs the few memory sizes and formats.
"""

from __future__ import annotations

import calendar
import datetime
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.db import models
from django.db.models import (
    Count,
    DateTimeField,
    DurationField,
    ExpressionWrapper,
    F,
    Q,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce, Greatest, Least
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from claims.models import AllocationRecordQuerySet, UsageRollup
from devices.models import Resolution

__all__ = [
    "MAX_PERIOD",
    "AllocationReport",
    "GroupBy",
    "Period",
    "PeriodError",
    "Preset",
    "ReportRow",
    "allocation_hours",
    "csv_rows",
    "resolve_period",
]

GIB = 2**30
MAX_PERIOD = datetime.timedelta(days=400)


class GroupBy(models.TextChoices):
    TENANT = "tenant", "Tenant"
    NAMESPACE = "namespace", "Namespace"
    DEVICE_CLASS = "device_class", "Device class"
    MODEL = "model", "GPU model"


class Preset(models.TextChoices):
    LAST_7_DAYS = "last-7-days", "Last 7 days"
    LAST_30_DAYS = "last-30-days", "Last 30 days"
    THIS_MONTH = "this-month", "This month"
    LAST_MONTH = "last-month", "Last month"
    CUSTOM = "custom", "Custom dates"


# What a group with an empty key is called.
UNKNOWN = {
    GroupBy.TENANT: "(no tenant)",
    GroupBy.NAMESPACE: "(no namespace)",
    GroupBy.DEVICE_CLASS: "(unknown class)",
    GroupBy.MODEL: "(unknown model)",
}


class PeriodError(ValueError):
    """A period that cannot be reported on; the message says why, for the user."""


@dataclass(frozen=True)
class Period:
    """``[start, end)``, aware datetimes."""

    start: datetime.datetime
    end: datetime.datetime

    @property
    def last_day(self) -> datetime.date:
        """The last calendar day the period touches (in the portal's time zone)."""
        return timezone.localtime(self.end - datetime.timedelta(microseconds=1)).date()


def _midnight(day: datetime.date) -> datetime.datetime:
    return timezone.make_aware(datetime.datetime.combine(day, datetime.time()))


def _month_start(day: datetime.date) -> datetime.date:
    return day.replace(day=1)


def _preset(preset: str, now: datetime.datetime) -> Period:
    today = timezone.localdate(now)
    if preset == Preset.LAST_7_DAYS:
        return Period(now - datetime.timedelta(days=7), now)
    if preset == Preset.LAST_30_DAYS:
        return Period(now - datetime.timedelta(days=30), now)
    first = _month_start(today)
    days = calendar.monthrange(first.year, first.month)[1]
    if preset == Preset.THIS_MONTH:
        return Period(_midnight(first), _midnight(first + datetime.timedelta(days=days)))
    if preset == Preset.LAST_MONTH:
        previous = _month_start(first - datetime.timedelta(days=1))
        return Period(_midnight(previous), _midnight(first))
    raise PeriodError(f"Unknown period {preset!r}: choose one of {', '.join(Preset.values)}.")


def _moment(value: str, name: str, *, end: bool) -> datetime.datetime:
    """A date (its midnight; for the end, the midnight after it: the day is included) or an
    ISO 8601 datetime (naive ones in the portal's time zone)."""
    value = value.strip()
    try:
        day = parse_date(value)
        moment = None if day else parse_datetime(value)
    except ValueError:
        day = moment = None
    if day is not None:
        return _midnight(day + datetime.timedelta(days=1 if end else 0))
    if moment is None:
        raise PeriodError(f"{name}: {value!r} is not a date (YYYY-MM-DD) or an ISO 8601 time.")
    return timezone.make_aware(moment) if timezone.is_naive(moment) else moment


def resolve_period(
    preset: str = "",
    start: str = "",
    end: str = "",
    *,
    now: datetime.datetime | None = None,
) -> Period:
    """The period a request asks for: ``start``/``end`` (dates, the end date included, or
    datetimes) when either is given, else ``preset`` (default: the last 30 days). Raises
    :class:`PeriodError` for an unreadable date, an end not after the start, or a period longer
    than ``MAX_PERIOD``."""
    now = now or timezone.now()
    if not start and not end:
        return _preset(preset or Preset.LAST_30_DAYS, now)
    if not start or not end:
        raise PeriodError("Give both a start and an end date.")
    period = Period(_moment(start, "From", end=False), _moment(end, "To", end=True))
    if period.end <= period.start:
        raise PeriodError("The end of the period must come after its start.")
    if period.end - period.start > MAX_PERIOD:
        raise PeriodError(f"A report covers at most {MAX_PERIOD.days} days.")
    return period


@dataclass
class ReportRow:
    key: str
    label: str
    device_hours: float = 0.0
    memory_gib_hours: float = 0.0
    allocations: int = 0
    # GPU utilisation of what the group held, weighted by device-seconds read (tenants and
    # namespaces only; None without readings), and whether those readings were simulated.
    gpu_util: float | None = None
    gpu_util_simulated: bool = False

    @property
    def device_hours_display(self) -> str:
        return f"{self.device_hours:,.1f}"

    @property
    def memory_gib_hours_display(self) -> str:
        return f"{self.memory_gib_hours:,.1f}"


@dataclass
class AllocationReport:
    period: Period
    group_by: GroupBy
    rows: list[ReportRow] = field(default_factory=list)

    @property
    def device_hours(self) -> float:
        return sum(row.device_hours for row in self.rows)

    @property
    def memory_gib_hours(self) -> float:
        return sum(row.memory_gib_hours for row in self.rows)

    @property
    def allocations(self) -> int:
        return sum(row.allocations for row in self.rows)

    @property
    def device_hours_display(self) -> str:
        return f"{self.device_hours:,.1f}"

    @property
    def memory_gib_hours_display(self) -> str:
        return f"{self.memory_gib_hours:,.1f}"

    @property
    def has_utilisation(self) -> bool:
        return self.group_by in (GroupBy.TENANT, GroupBy.NAMESPACE)

    def sorted_by(self, sort: str) -> list[ReportRow]:
        """Rows by ``hours`` / ``memory`` (largest first; ``-`` prefix: smallest first) or
        ``group`` (alphabetical; ``-group``: reversed)."""
        descending = not sort.startswith("-")
        name = sort.lstrip("-")
        if name == "group":
            return sorted(self.rows, key=lambda row: row.label.lower(), reverse=not descending)
        measure = "memory_gib_hours" if name == "memory" else "device_hours"
        return sorted(
            self.rows,
            key=lambda row: (getattr(row, measure), row.label.lower()),
            reverse=descending,
        )


def _group_expressions(group_by: GroupBy) -> tuple[models.Expression | F, models.Expression | F]:
    """(key, label) of a record's group. Tenants report under their current name, deleted
    ones under the name the record kept."""
    if group_by == GroupBy.TENANT:
        return Coalesce(F("tenant__slug"), F("tenant_slug")), Coalesce(
            F("tenant__name"), F("tenant_name")
        )
    column = {
        GroupBy.NAMESPACE: "namespace",
        GroupBy.DEVICE_CLASS: "device_class",
        GroupBy.MODEL: "model_name",
    }[group_by]
    return F(column), F(column)


def allocation_hours(
    records: AllocationRecordQuerySet,
    period: Period,
    group_by: GroupBy | str,
    *,
    now: datetime.datetime | None = None,
) -> AllocationReport:
    """Device-hours and device-memory-GiB-hours per group over ``period``, of ``records``
    (pass ``AllocationRecord.objects.visible_to(user)``: the report shows what it is given).
    Open records count up to ``now``. One query."""
    group_by = GroupBy(group_by)
    now = now or timezone.now()
    report = AllocationReport(period, group_by)
    until = min(period.end, now)
    if until <= period.start:
        return report
    held_from = Greatest(F("started_at"), Value(period.start, output_field=DateTimeField()))
    held_until = Least(
        Coalesce(F("ended_at"), Value(now, output_field=DateTimeField())),
        Value(until, output_field=DateTimeField()),
    )
    key, label = _group_expressions(group_by)
    sums = (
        records.charged()
        .overlapping(period.start, until)
        .order_by()
        .values(group_key=key, group_label=label, memory=F("memory_bytes"))
        .annotate(
            held=Sum(ExpressionWrapper(held_until - held_from, output_field=DurationField())),
            allocations=Count("pk"),
        )
    )
    rows: dict[str, ReportRow] = {}
    for entry in sums:
        group = entry["group_key"] or ""
        row = rows.setdefault(
            group, ReportRow(group, entry["group_label"] or group or UNKNOWN[group_by])
        )
        hours = entry["held"].total_seconds() / 3600 if entry["held"] else 0.0
        row.device_hours += hours
        row.memory_gib_hours += hours * (entry["memory"] or 0) / GIB
        row.allocations += entry["allocations"]
    report.rows = AllocationReport(period, group_by, list(rows.values())).sorted_by("hours")
    if report.has_utilisation:
        _add_utilisation(report, period.start, until)
    return report


def _add_utilisation(
    report: AllocationReport, start: datetime.datetime, until: datetime.datetime
) -> None:
    """Each tenant's or namespace's GPU utilisation over the period, from the hourly
    ``UsageRollup`` buckets inside it (one query, for the groups the report already shows)."""
    scope = (
        UsageRollup.Scope.TENANT
        if report.group_by == GroupBy.TENANT
        else UsageRollup.Scope.NAMESPACE
    )
    by_key = {row.key: row for row in report.rows if row.key}
    read = Q(gpu_util_avg__isnull=False)
    sums = (
        UsageRollup.objects.filter(
            scope=scope,
            key__in=list(by_key),
            resolution=Resolution.HOUR,
            bucket_start__gte=start,
            bucket_start__lt=until,
        )
        .order_by()
        .values("key")
        .annotate(
            seconds=Sum("device_seconds", filter=read),
            weighted=Sum(F("gpu_util_avg") * F("device_seconds"), filter=read),
            simulated=Count("pk", filter=Q(is_simulated=True)),
        )
    )
    for entry in sums:
        row = by_key[entry["key"]]
        if entry["seconds"]:
            row.gpu_util = round(entry["weighted"] / entry["seconds"], 1)
        row.gpu_util_simulated = bool(entry["simulated"])


CSV_COLUMNS = [
    "group",
    "device_hours",
    "memory_gib_hours",
    "allocations",
    "group_by",
    "period_start",
    "period_end",
]


def csv_rows(report: AllocationReport, rows: list[ReportRow] | None = None) -> Iterator[list[str]]:
    """The report as CSV rows, header first: numbers unformatted (3 decimals), the period as
    ISO 8601 times in UTC on every row, so that concatenated exports stay readable."""
    start = report.period.start.astimezone(datetime.UTC).isoformat()
    end = report.period.end.astimezone(datetime.UTC).isoformat()
    yield CSV_COLUMNS
    for row in report.rows if rows is None else rows:
        yield [
            row.label,
            f"{row.device_hours:.3f}",
            f"{row.memory_gib_hours:.3f}",
            str(row.allocations),
            report.group_by.value,
            start,
            end,
        ]
