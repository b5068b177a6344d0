"""Table of the claim list (STYLE §6)."""

from __future__ import annotations

import django_tables2 as tables
from django.utils.html import format_html

from claims.models import ResourceClaim

__all__ = ["ResourceClaimTable", "claim_state_badge", "device_count_text"]

STATE_CLASSES = {
    ResourceClaim.State.PENDING: "text-bg-light border",
    ResourceClaim.State.ALLOCATED: "state-allocated",
    ResourceClaim.State.IN_USE: "state-free",
    ResourceClaim.State.DELETING: "state-tainted",
}


def claim_state_badge(claim: ResourceClaim) -> str:
    state = claim.state
    return format_html('<span class="badge {}">{}</span>', STATE_CLASSES[state], state.label)


def device_count_text(held: int, observed: int) -> str:
    """``"2"``, ``"8 (admin access)"``, ``"1 + 2 (admin access)"``: results that hold their
    device, and admin-access results, which observe a device without holding it."""
    if not observed:
        return str(held)
    if not held:
        return f"{observed} (admin access)"
    return f"{held} + {observed} (admin access)"


class ResourceClaimTable(tables.Table):
    """Claims annotated by ``ResourceClaim.objects.with_device_counts()`` (``device_count``,
    ``observed_device_count``)."""

    namespace = tables.Column(attrs={"td": {"class": "text-nowrap"}})
    name = tables.Column(linkify=True, attrs={"td": {"class": "fw-medium"}})
    state = tables.Column(empty_values=(), orderable=False)
    device_count = tables.Column(
        verbose_name="Devices",
        attrs={"td": {"class": "text-end text-nowrap"}, "th": {"class": "text-end"}},
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

    def render_device_count(self, record: ResourceClaim) -> str:
        return device_count_text(record.device_count, record.observed_device_count)  # type: ignore[attr-defined]
