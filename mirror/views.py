"""The mirror's health, for portal admins: each watcher's progress and the rows it wrote."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse

from mirror.mapping import MIRRORED_KINDS
from mirror.models import MirrorStatus
from mirror.store import MODELS
from portal.htmx import render_page

__all__ = ["KindRows", "mirror_status", "rows_per_kind"]


@dataclass(frozen=True)
class KindRows:
    kind: str
    rows: int
    malformed: int


def rows_per_kind() -> list[KindRows]:
    """Live row counts per mirrored kind, and how many rows were stored flagged as malformed
    (``problems != []``): one query per kind."""
    counts = []
    for kind in MIRRORED_KINDS:
        totals = MODELS[kind].objects.aggregate(
            rows=Count("pk"), malformed=Count("pk", filter=~Q(problems=[]))
        )
        counts.append(KindRows(str(kind), totals["rows"], totals["malformed"]))
    return counts


@login_required
def mirror_status(request: HttpRequest) -> HttpResponse:
    if not request.user.is_staff:
        raise PermissionDenied("The mirror's health is for portal admins.")
    statuses = list(MirrorStatus.objects.all())
    stale = [status for status in statuses if status.is_stale]
    context = {
        "statuses": statuses,
        "stale": stale,
        "very_stale": any(s.freshness == MirrorStatus.Freshness.VERY_STALE for s in stale),
        "stale_seconds": settings.MIRROR_STALE_SECONDS,
        "kinds": rows_per_kind(),
    }
    return render_page(request, "mirror/mirrorstatus_list.html", "mirror-status", context)
