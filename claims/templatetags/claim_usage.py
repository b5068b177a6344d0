"""``{% quota_usage tenant %}``: a tenant's usage against its quotas, per device class, as
small bars (used, in flight, limit) for devices, device memory and claims, with the longest
lease. A template tag so that the tenancy pages, which sit below ``claims`` in the import
layering, can show it without importing it.

``layout="table"`` renders the quotas page's table (a row per class, every limit, the approval
policy, and edit links for portal admins); ``quotas=`` passes the tenant's quotas a page has
already read (with ``device_class_in_cluster``), saving the tag its own query.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import template

from claims.models import UsageRollup
from claims.requests.quota import ClassUsage, tenant_usage
from claims.usage.utilisation import scope_utilisation
from portal.models import Quota, Tenant
from toolkit.charts import time_range

register = template.Library()


def _bar(used: int, in_flight: int, limit: int | None) -> dict[str, Any]:
    """Percentages of the limit (of the total when unlimited) for a two-part bar."""
    scale = limit if limit else max(used + in_flight, 1)
    used_pct = min(100, round(100 * used / scale))
    return {
        "used": used,
        "in_flight": in_flight,
        "total": used + in_flight,
        "limit": limit,
        "unlimited": limit is None,
        "used_pct": used_pct,
        "in_flight_pct": min(100 - used_pct, round(100 * in_flight / scale)),
        "over": limit is not None and used + in_flight > limit,
    }


def usage_rows(tenant: Tenant, quotas: Iterable[Quota] | None = None) -> list[dict[str, Any]]:
    """Per device class the tenant has a quota for or holds something of: its quota (None:
    none, so a limit of 0) and a bar each for devices, device memory (bytes) and claims."""
    usage = tenant_usage(tenant)
    if quotas is None:
        quotas = Quota.objects.filter(tenant=tenant)
    by_class = {quota.device_class_name: quota for quota in quotas}
    rows = []
    for name in sorted(set(by_class) | set(usage)):
        if not name:
            continue
        quota = by_class.get(name)
        held = usage.get(name, ClassUsage())

        def limit(field: str, quota: Quota | None = quota) -> int | None:
            return getattr(quota, field) if quota is not None else 0

        rows.append(
            {
                "device_class": name,
                "quota": quota,
                "devices": _bar(held.devices, held.in_flight_devices, limit("max_devices")),
                "memory": _bar(
                    held.memory_bytes, held.in_flight_memory_bytes, limit("max_device_memory")
                ),
                "claims": _bar(held.claims, held.in_flight_claims, limit("max_claims")),
            }
        )
    return rows


@register.inclusion_tag("claims/includes/quota_usage.html", takes_context=True)
def quota_usage(
    context: template.Context,
    tenant: Tenant,
    layout: str = "compact",
    quotas: Iterable[Quota] | None = None,
    can_edit: bool = False,
) -> dict[str, Any]:
    return {
        "tenant": tenant,
        "rows": usage_rows(tenant, quotas),
        "layout": layout,
        "can_edit": can_edit,
        "csrf_token": context.get("csrf_token"),
    }


@register.inclusion_tag("claims/includes/tenant_utilisation.html", takes_context=True)
def tenant_utilisation(context: dict[str, Any], tenant: Tenant) -> dict[str, Any]:
    """``{% tenant_utilisation tenant %}``: the tenant's GPU utilisation over the page's
    ``?range=`` (a chart with its picker), from the per-tenant usage rollups."""
    request = context.get("request")
    span = time_range(request.GET.get("range") if request is not None else None)
    return {
        "request": request,
        "tenant": tenant,
        "span": span,
        "utilisation": scope_utilisation(UsageRollup.Scope.TENANT, tenant.slug, span),
    }
