"""``{% quota_usage tenant %}``: a tenant's usage against its quotas, per device class, as
small bars (used, in flight, limit). A template tag so that the tenancy pages, which sit below
``claims`` in the import layering, can show it without importing it."""

from __future__ import annotations

from typing import Any

from django import template

from claims.quota import ClassUsage, tenant_usage
from portal.models import Quota, Tenant

register = template.Library()


def _bar(used: int, in_flight: int, limit: int | None) -> dict[str, Any]:
    """Percentages of the limit (of the total when unlimited) for a two-part bar."""
    scale = limit if limit else max(used + in_flight, 1)
    return {
        "used": used,
        "in_flight": in_flight,
        "limit": limit,
        "used_pct": min(100, round(100 * used / scale)),
        "in_flight_pct": min(
            100 - min(100, round(100 * used / scale)), round(100 * in_flight / scale)
        ),
        "over": limit is not None and used + in_flight > limit,
    }


def usage_rows(tenant: Tenant) -> list[dict[str, Any]]:
    usage = tenant_usage(tenant)
    quotas = {quota.device_class_name: quota for quota in Quota.objects.filter(tenant=tenant)}
    rows = []
    for name in sorted(set(quotas) | set(usage)):
        if not name:
            continue
        quota = quotas.get(name)
        held = usage.get(name, ClassUsage())
        rows.append(
            {
                "device_class": name,
                "quota": quota,
                "devices": _bar(
                    held.devices, held.in_flight_devices, quota.max_devices if quota else 0
                ),
                "memory": _bar(
                    held.memory_bytes,
                    held.in_flight_memory_bytes,
                    quota.max_device_memory if quota else 0,
                )
                if quota is not None and quota.max_device_memory is not None
                else None,
                "claims": held.total_claims,
                "max_claims": quota.max_claims if quota else 0,
            }
        )
    return rows


@register.inclusion_tag("claims/includes/quota_usage.html")
def quota_usage(tenant: Tenant) -> dict[str, Any]:
    return {"tenant": tenant, "rows": usage_rows(tenant)}
