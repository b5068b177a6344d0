"""The mirror's health, for portal admins: each watcher's progress and the rows it wrote; and
each tenant's ResourceQuota backstop (``mirror.backstop``), read from its status rows."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect

from kube.errors import Unavailable
from mirror.backstop import QUOTA_NAME, check_backstop, desired_hard, repair_backstop
from mirror.mapping import MIRRORED_KINDS
from mirror.models import BackstopStatus, MirrorStatus
from mirror.store import MODELS
from portal.access import get_tenant_for_user
from portal.models import Tenant
from portal.services.tenants import save_tenant
from toolkit.htmx import render_page

__all__ = [
    "KindRows",
    "mirror_status",
    "rows_per_kind",
    "tenant_backstop",
    "tenant_backstop_check",
    "tenant_backstop_repair",
    "tenant_backstop_switch",
]


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
        totals = MODELS[kind]._default_manager.aggregate(
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


# -- the ResourceQuota backstop of one tenant ---------------------------------------------


@dataclass(frozen=True)
class HardRow:
    resource: str
    desired: str | None
    live: str | None
    change: str  # "", "changed", "missing", "extra"


@dataclass(frozen=True)
class NamespaceRow:
    namespace: str
    status: BackstopStatus | None
    hard: list[HardRow]


def _namespace_rows(tenant: Tenant) -> list[NamespaceRow]:
    """Per namespace of the tenant, its last recorded status and desired vs live ``hard``
    (desired from the portal's quotas now; live as last read)."""
    desired = desired_hard(tenant)
    statuses = {status.namespace: status for status in BackstopStatus.objects.filter(tenant=tenant)}
    rows = []
    for namespace in tenant.namespace_names:
        status = statuses.get(namespace)
        live = status.live if status is not None else None
        changes = {d["resource"]: d["change"] for d in (status.differences if status else [])}
        keys = sorted(set(desired) | set(live or {}))
        hard = [
            HardRow(key, desired.get(key), (live or {}).get(key), changes.get(key, ""))
            for key in keys
        ]
        rows.append(NamespaceRow(namespace, status, hard))
    return rows


@login_required
def tenant_backstop(request: HttpRequest, slug: str) -> HttpResponse:
    tenant = get_tenant_for_user(request.user, slug)
    context = {
        "tenant": tenant,
        "rows": _namespace_rows(tenant) if tenant.resource_quota_backstop else [],
        "leftover": BackstopStatus.objects.filter(tenant=tenant).count(),
        "desired": desired_hard(tenant),
        "quota_name": QUOTA_NAME,
        "can_repair": Tenant.objects.administered_by(request.user).filter(pk=tenant.pk).exists(),
        "can_switch": request.user.is_staff,
    }
    return render_page(request, "mirror/tenant_backstop.html", "backstop-status", context)


def _post_only(request: HttpRequest) -> HttpResponse | None:
    return None if request.method == "POST" else HttpResponseNotAllowed(["POST"])


@login_required
def tenant_backstop_check(request: HttpRequest, slug: str) -> HttpResponse:
    """Check now: read the cluster and record what it holds (changes nothing there)."""
    tenant = get_tenant_for_user(request.user, slug, write=True)
    if (refused := _post_only(request)) is not None:
        return refused
    results = check_backstop(tenant)
    if not tenant.resource_quota_backstop:
        messages.info(request, "The backstop is off: there is nothing to check.")
    elif any(r.state == BackstopStatus.State.ERROR for r in results):
        messages.error(request, "Checked, but some namespaces could not be read: see below.")
    else:
        drifted = sum(r.state != BackstopStatus.State.IN_SYNC for r in results)
        messages.success(
            request,
            f"Checked {len(results)} namespaces: "
            + (f"{drifted} need attention." if drifted else "all in sync."),
        )
    return redirect("tenant-backstop", slug=tenant.slug)


@login_required
def tenant_backstop_repair(request: HttpRequest, slug: str) -> HttpResponse:
    """Repair: apply the desired ResourceQuota again in every namespace (audited)."""
    tenant = get_tenant_for_user(request.user, slug, write=True)
    if (refused := _post_only(request)) is not None:
        return refused
    try:
        results = repair_backstop(actor=request.user, tenant=tenant)
    except ValueError as error:
        messages.error(request, str(error))
    except Unavailable as error:
        messages.error(request, f"The API server is unreachable; nothing was changed. ({error})")
    else:
        failed = [r.namespace for r in results if r.state != BackstopStatus.State.IN_SYNC]
        if failed:
            messages.error(request, f"Not repaired: {', '.join(failed)} (see below).")
        else:
            messages.success(
                request,
                f"The ResourceQuota is as the portal wants it in {len(results)} namespaces.",
            )
    return redirect("tenant-backstop", slug=tenant.slug)


@login_required
def tenant_backstop_switch(request: HttpRequest, slug: str) -> HttpResponse:
    """Portal admins switch the backstop on or off (``enabled`` = "on" / "off")."""
    tenant = get_tenant_for_user(request.user, slug)
    if not request.user.is_staff:
        raise PermissionDenied("Only portal admins switch the ResourceQuota backstop.")
    if (refused := _post_only(request)) is not None:
        return refused
    enabled = request.POST.get("enabled") == "on"
    save_tenant(actor=request.user, tenant=tenant, resource_quota_backstop=enabled)
    messages.success(
        request,
        "The backstop is on: the ResourceQuota is being applied in every namespace."
        if enabled
        else "The backstop is off: the portal's ResourceQuotas are being removed.",
    )
    return redirect("tenant-backstop", slug=tenant.slug)
