"""Table of a tenant's webhook deliveries (STYLE §6)."""

from __future__ import annotations

import django_tables2 as tables
from django.utils.html import format_html

from notifications.models import WebhookDelivery

__all__ = ["WebhookDeliveryTable", "delivery_state_badge"]

STATE_CLASSES = {
    WebhookDelivery.State.PENDING: "text-bg-light border",
    WebhookDelivery.State.DELIVERED: "text-bg-success",
    WebhookDelivery.State.FAILED: "text-bg-danger",
}


def delivery_state_badge(delivery: WebhookDelivery) -> str:
    state = WebhookDelivery.State(delivery.state)
    return format_html(
        '<span class="badge {}" data-state="{}">{}</span>',
        STATE_CLASSES[state],
        state.value,
        state.label,
    )


class WebhookDeliveryTable(tables.Table):
    created_at = tables.DateTimeColumn(
        format="Y-m-d H:i:s", verbose_name="Created", attrs={"td": {"class": "text-nowrap"}}
    )
    event = tables.Column(attrs={"td": {"class": "font-monospace small"}})
    state = tables.Column()
    attempts = tables.Column(attrs={"td": {"class": "text-end"}, "th": {"class": "text-end"}})
    last_status_code = tables.Column(
        verbose_name="Last status", attrs={"td": {"class": "text-end"}}
    )
    last_error = tables.Column(verbose_name="Last error", attrs={"td": {"class": "small"}})
    next_attempt_at = tables.DateTimeColumn(
        format="Y-m-d H:i:s", verbose_name="Next attempt", attrs={"td": {"class": "text-nowrap"}}
    )
    id = tables.Column(verbose_name="Delivery id", attrs={"td": {"class": "font-monospace small"}})

    class Meta:
        model = WebhookDelivery
        fields = [
            "created_at",
            "event",
            "state",
            "attempts",
            "last_status_code",
            "last_error",
            "next_attempt_at",
            "id",
        ]
        attrs = {"class": "table table-hover align-middle mb-0"}
        empty_text = "No delivery matches."

    def render_state(self, record: WebhookDelivery) -> str:
        return delivery_state_badge(record)
