"""FilterSet of a tenant's webhook deliveries (STYLE §6)."""

from __future__ import annotations

import django_filters

from notifications.models import WebhookDelivery

__all__ = ["WebhookDeliveryFilterSet"]


class WebhookDeliveryFilterSet(django_filters.FilterSet):
    state = django_filters.ChoiceFilter(
        choices=WebhookDelivery.State.choices, label="State", empty_label="Any state"
    )
    event = django_filters.CharFilter(label="Event")

    class Meta:
        model = WebhookDelivery
        fields = ["state", "event"]
