"""Claim requests by state, read at scrape time (``portal.metrics``): one grouped count."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count
from prometheus_client.core import GaugeMetricFamily, Metric

from claims.models import ClaimRequest
from portal.metrics import PREFIX, CachedCollector

__all__ = ["ClaimRequestCollector"]


class ClaimRequestCollector(CachedCollector):
    name = "claim_requests"

    def read(self) -> Iterable[Metric]:
        counts = dict(
            ClaimRequest.objects.order_by()
            .values("state")
            .annotate(count=Count("pk"))
            .values_list("state", "count")
        )
        family = GaugeMetricFamily(
            f"{PREFIX}_claim_requests",
            "Claim requests in each state (every state listed, 0 included).",
            labels=["state"],
        )
        for state in ClaimRequest.State:
            family.add_metric([state.value], float(counts.get(state.value, 0)))
        return [family]
