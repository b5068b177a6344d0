"""Table of the claim list (STYLE §6)."""

from __future__ import annotations

import django_tables2 as tables
from django.utils.html import format_html

from claims.models import ResourceClaim

__all__ = ["ResourceClaimTable", "claim_state_badge"]

STATE_CLASSES = {
    ResourceClaim.State.PENDING: "text-bg-light border",
    ResourceClaim.State.ALLOCATED: "state-allocated",
    ResourceClaim.State.IN_USE: "state-free",
    ResourceClaim.State.DELETING: "state-tainted",
}


def claim_state_badge(claim: ResourceClaim) -> str:
    state = claim.state
    return format_html('<span class="badge {}">{}</span>', STATE_CLASSES[state], state.label)


class ResourceClaimTable(tables.Table):
    """Claims annotated with ``device_count`` (non-admin allocation results)."""

    namespace = tables.Column(attrs={"td": {"class": "text-nowrap"}})
    name = tables.Column(linkify=True, attrs={"td": {"class": "fw-medium"}})
    state = tables.Column(empty_values=(), orderable=False)
    device_count = tables.Column(
        verbose_name="Devices", attrs={"td": {"class": "text-end"}, "th": {"class": "text-end"}}
    )
    consumer_count = tables.Column(
        verbose_name="Consumers", attrs={"td": {"class": "text-end"}, "th": {"class": "text-end"}}
    )
    owner_pod = tables.Column(verbose_name="Pod")
    created_at = tables.DateTimeColumn(
        format="Y-m-d H:i", verbose_name="Created", attrs={"td": {"class": "text-nowrap"}}
    )

    class Meta:
        model = ResourceClaim
        fields = [
            "namespace",
            "name",
            "state",
            "device_count",
            "consumer_count",
            "owner_pod",
            "created_at",
        ]
        attrs = {"class": "table table-hover align-middle mb-0"}
        empty_text = "No claim matches."

    def render_state(self, record: ResourceClaim) -> str:
        return claim_state_badge(record)
