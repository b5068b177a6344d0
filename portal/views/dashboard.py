"""The home page: what exists, at a glance."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from devices.models import Node
from portal.models import ApiToken, Quota, Tenant
from portal.overview import cluster_overview

__all__ = ["dashboard", "gpus_by_model"]


def gpus_by_model(dra_gpus: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``[{"model_name", "count"}]`` of the whole GPUs DRA drivers publish (``dra_gpus``) and
    of those device plugins advertise as node extended resources (legacy nodes DRA does not
    manage), most numerous first: the same GPUs the node list counts per node."""
    counts: Counter[str] = Counter({gpu["model_name"]: gpu["count"] for gpu in dra_gpus})
    for gpus in Node.objects.device_plugin_gpus().values():
        for model, count in gpus:
            counts[model] += count
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [{"model_name": model, "count": count} for model, count in ordered]


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    tenants = Tenant.objects.visible_to(request.user).prefetch_related("namespaces")
    cluster = cluster_overview(request.user)
    if cluster is not None:
        cluster["gpus"] = gpus_by_model(cluster["gpus"])
    context = {
        "tenants": tenants[:8],
        "tenant_count": tenants.count(),
        "quota_count": Quota.objects.visible_to(request.user).count(),
        "token_count": ApiToken.objects.filter(user=request.user).usable().count(),
        "cluster": cluster,
    }
    return render(request, "portal/dashboard.html", context)
