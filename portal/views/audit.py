"""The audit log: every audited change a portal admin (all) or tenant admin (their tenants)
may see, filterable, and the same list as a CSV download.

Members of a tenant have no audit log: they get a 403 that says so.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone

from portal.filtersets import AuditEventFilterSet
from portal.models import AuditEvent, Tenant
from portal.tables import AuditLogTable, object_type_name
from toolkit.htmx import render_list

__all__ = ["CSV_COLUMNS", "auditevent_export", "auditevent_list", "csv_safe"]

TEMPLATE = "portal/auditevent_list.html"
DENIED = (
    "The audit log is for tenant admins and portal admins. Ask a tenant admin of your team "
    "what changed, or to make you a tenant admin."
)
CSV_COLUMNS = [
    "time",
    "actor",
    "action",
    "tenant",
    "object_type",
    "object_id",
    "object",
    "before",
    "after",
]
# A spreadsheet runs a cell starting with one of these as a formula (CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
CSV_CHUNK_ROWS = 500


def _may_read_audit_log(request: HttpRequest) -> bool:
    user = request.user
    return user.is_staff or Tenant.objects.administered_by(user).exists()


def _denied(request: HttpRequest) -> HttpResponse:
    return render(request, TEMPLATE, {"denied": DENIED}, status=403)


def _filterset(request: HttpRequest) -> AuditEventFilterSet:
    events = AuditEvent.objects.visible_to(request.user).select_related("tenant")
    return AuditEventFilterSet(request.GET, queryset=events, request=request)


def _filters_only(request: HttpRequest) -> str:
    """The query string of the list's filters, without its page, size or order."""
    query = request.GET.copy()
    for name in ("page", "per_page", "sort"):
        query.pop(name, None)
    return query.urlencode()


@login_required
def auditevent_list(request: HttpRequest) -> HttpResponse:
    if not _may_read_audit_log(request):
        return _denied(request)
    visible = AuditEvent.objects.visible_to(request.user)

    def filter_choices() -> dict[str, Any]:
        types = visible.order_by("object_type").values_list("object_type", flat=True)
        return {
            "object_type": (
                "Any object type",
                [(label, object_type_name(label)) for label in types.distinct()],
            )
        }

    return render_list(
        request,
        filterset=_filterset(request),
        table_class=AuditLogTable,
        template=TEMPLATE,
        fragment="auditevent-table",
        filter_choices=filter_choices,
        context={"export_query": _filters_only(request)},
    )


def csv_safe(value: str) -> str:
    """``value`` as a spreadsheet shows it, never runs it: a leading quote before a formula."""
    return f"'{value}" if value.startswith(FORMULA_STARTS) else value


def _json(value: Any) -> str:
    return "" if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False)


def _csv_row(event: AuditEvent) -> list[str]:
    moment = event.created_at.astimezone(dt.UTC).isoformat(timespec="seconds")
    return [
        csv_safe(cell)
        for cell in (
            moment.replace("+00:00", "Z"),
            event.actor_name,
            event.action,
            event.tenant.slug if event.tenant is not None else "",
            event.object_type,
            event.object_id,
            event.object_repr,
            _json(event.before),
            _json(event.after),
        )
    ]


class _Echo:
    """A file for ``csv.writer`` that hands each line back instead of keeping it."""

    def write(self, value: str) -> str:
        return value


def _csv_lines(events: QuerySet[AuditEvent]) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_COLUMNS)
    for event in events.iterator(chunk_size=CSV_CHUNK_ROWS):
        yield writer.writerow(_csv_row(event))


@login_required
def auditevent_export(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """The filtered list as CSV, streamed row by row (never the whole trail in memory).
    An invalid filter is a 400 naming it, rather than a file that silently says less."""
    if not _may_read_audit_log(request):
        return _denied(request)
    filterset = _filterset(request)
    if not filterset.is_valid():
        problems = "; ".join(
            f"{name}: {' '.join(errors)}" for name, errors in filterset.errors.items()
        )
        return HttpResponse(
            f"Invalid filter: {problems}\n", status=400, content_type="text/plain; charset=utf-8"
        )
    response = StreamingHttpResponse(_csv_lines(filterset.qs), content_type="text/csv")
    stamp = timezone.now().astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="audit-log-{stamp}.csv"'
    return response
