"""The allocation-hours report page (chargeback): table, bar chart and CSV export of one report.

Parse (``ReportForm``) → gate (``AllocationRecord.objects.visible_to``: portal admins every
tenant, everyone else their tenants, members included) → compute (``claims.usage.reports``) →
respond (the page, or ``?format=csv`` with the same parameters).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils import timezone

from claims.models import AllocationRecord
from claims.usage.reports import (
    AllocationReport,
    GroupBy,
    Period,
    PeriodError,
    Preset,
    ReportRow,
    allocation_hours,
    csv_rows,
    resolve_period,
)
from toolkit.htmx import render_page

__all__ = ["ReportForm", "allocation_report", "bar_chart"]

SORTS = {
    "hours": "Device-hours",
    "memory": "Memory GiB-hours",
    "group": "Group",
}
CHART_BARS = 10


class ReportForm(forms.Form):
    """``period`` (a preset) or ``from``/``to`` (dates, both days included), ``group_by``,
    ``sort``. Unbound, it reports the last 30 days by tenant."""

    period = forms.ChoiceField(choices=Preset.choices, required=False)
    group_by = forms.ChoiceField(choices=GroupBy.choices, required=False, label="Group by")
    sort = forms.ChoiceField(
        choices=[(f"{sign}{key}", key) for key in SORTS for sign in ("", "-")], required=False
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        date = forms.DateInput(attrs={"type": "date", "class": "form-control"})
        # "from" is a keyword, so these two are added by name.
        self.fields["from"] = forms.CharField(required=False, label="From", widget=date)
        self.fields["to"] = forms.CharField(required=False, label="To", widget=date)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        assert data is not None  # Form.clean returns cleaned_data
        preset = data.get("period") or ""
        start, end = data.get("from") or "", data.get("to") or ""
        if preset and preset != Preset.CUSTOM:
            start = end = ""  # a preset chosen wins over dates left in the form
        elif preset == Preset.CUSTOM and not (start or end):
            raise forms.ValidationError("Choose the dates of a custom period.")
        try:
            data["period_range"] = resolve_period(preset, start, end)
        except PeriodError as error:
            raise forms.ValidationError(str(error)) from error
        data["group_by"] = GroupBy(data.get("group_by") or GroupBy.TENANT)
        data["sort"] = data.get("sort") or "hours"
        return data


def bar_chart(rows: list[ReportRow], limit: int = CHART_BARS) -> dict[str, Any]:
    """Geometry of a horizontal bar chart of the ``limit`` largest groups by device-hours, for
    the template's inline SVG (no JS): label column, bars scaled to the largest, values."""
    top = sorted(rows, key=lambda row: -row.device_hours)[:limit]
    largest = max((row.device_hours for row in top), default=0.0) or 1.0
    bar_height, gap, label_width, bar_width = 22, 8, 220, 320
    bars = [
        {
            "label": row.label if len(row.label) <= 30 else f"{row.label[:29]}…",
            "title": f"{row.label}: {row.device_hours_display} device-hours, "
            f"{row.memory_gib_hours_display} memory GiB-hours",
            "value": row.device_hours_display,
            "y": index * (bar_height + gap),
            "text_y": index * (bar_height + gap) + bar_height * 0.7,
            "width": round(max(row.device_hours / largest * bar_width, 1.0), 1),
            "value_x": label_width + 8 + round(row.device_hours / largest * bar_width, 1) + 6,
        }
        for index, row in enumerate(top)
    ]
    return {
        "bars": bars,
        "height": max(len(bars) * (bar_height + gap) - gap, 0),
        "width": label_width + bar_width + 100,
        "label_width": label_width,
        "bar_x": label_width + 8,
        "bar_height": bar_height,
        "others": max(len(rows) - limit, 0),
    }


class _Echo:
    """A file-like ``write`` that hands the line back, for streaming ``csv.writer`` output."""

    def write(self, value: str) -> str:
        return value


def _csv_response(report: AllocationReport, rows: list[ReportRow]) -> StreamingHttpResponse:
    writer = csv.writer(_Echo())
    lines: Iterator[str] = (writer.writerow(line) for line in csv_rows(report, rows))
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    first = timezone.localtime(report.period.start).date().isoformat()
    last = report.period.last_day.isoformat()
    name = f"allocation-hours-{report.group_by.value}-{first}-to-{last}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
def allocation_report(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    form = ReportForm(request.GET)
    context: dict[str, Any] = {"form": form, "sorts": SORTS, "group_by_choices": GroupBy.choices}
    if not form.is_valid():
        context.update(report=None, rows=[], chart=None)
        return render_page(request, "claims/report.html", "report-body", context, status=400)
    period: Period = form.cleaned_data["period_range"]
    report = allocation_hours(
        AllocationRecord.objects.visible_to(request.user), period, form.cleaned_data["group_by"]
    )
    rows = report.sorted_by(form.cleaned_data["sort"])
    if request.GET.get("format") == "csv":
        return _csv_response(report, rows)
    query = request.GET.copy()
    query.pop("format", None)
    export = query.copy()
    export["format"] = "csv"
    query.pop("sort", None)
    context.update(
        report=report,
        rows=rows,
        chart=bar_chart(report.rows),
        sort=form.cleaned_data["sort"],
        query=query.urlencode(),
        csv_query=export.urlencode(),
        first_day=timezone.localtime(period.start).date(),
        last_day=period.last_day,
        group_label=GroupBy(report.group_by).label,
    )
    return render_page(request, "claims/report.html", "report-body", context)
