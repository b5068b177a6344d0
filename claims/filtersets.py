"""FilterSets of the claim lists, shared by the HTML pages and the API (STYLE §6)."""

from __future__ import annotations

import django_filters
from django.db.models import Exists, OuterRef, QuerySet

from claims.models import AllocatedDevice, ClaimIdleness, ClaimRequest, ResourceClaim
from devices.filtersets import search_box

__all__ = ["ClaimRequestFilterSet", "IdleClaimFilterSet", "ResourceClaimFilterSet"]

State = ResourceClaim.State


class ResourceClaimFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(
        field_name="name",
        lookup_expr="icontains",
        label="Search claims",
        widget=search_box("Search claims"),
    )
    namespace = django_filters.CharFilter(field_name="namespace", label="Namespace")
    state = django_filters.ChoiceFilter(
        choices=State.choices, method="in_state", label="State", empty_label="Any state"
    )
    driver = django_filters.CharFilter(method="with_driver", label="Driver")

    class Meta:
        model = ResourceClaim
        fields = ["q", "namespace", "state", "driver"]

    def in_state(
        self, queryset: QuerySet[ResourceClaim], name: str, value: str
    ) -> QuerySet[ResourceClaim]:
        """The same precedence as ``ResourceClaim.state``: deleting, in use, allocated, pending."""
        not_deleting = queryset.filter(is_deleting=False)
        return {
            State.DELETING: queryset.filter(is_deleting=True),
            State.IN_USE: not_deleting.filter(consumer_count__gt=0),
            State.ALLOCATED: not_deleting.filter(consumer_count=0, is_allocated=True),
            State.PENDING: not_deleting.filter(consumer_count=0, is_allocated=False),
        }[State(value)]

    def with_driver(
        self, queryset: QuerySet[ResourceClaim], name: str, value: str
    ) -> QuerySet[ResourceClaim]:
        """Claims with an allocation result from ``value`` (a subquery, so that annotated
        counts over ``allocated_devices`` are not multiplied by a join)."""
        results = AllocatedDevice.objects.filter(claim=OuterRef("pk"), driver=value)
        return queryset.filter(Exists(results))


class ClaimRequestFilterSet(django_filters.FilterSet):
    """The claim requests list (My claims) and the API's ``?field=`` parameters."""

    q = django_filters.CharFilter(
        field_name="name",
        lookup_expr="icontains",
        label="Search requests",
        widget=search_box("Search requests"),
    )
    state = django_filters.ChoiceFilter(
        choices=ClaimRequest.State.choices, label="State", empty_label="Any state"
    )
    namespace = django_filters.CharFilter(field_name="namespace", label="Namespace")
    device_class = django_filters.CharFilter(field_name="device_class_name", label="Device class")
    tenant = django_filters.CharFilter(field_name="tenant__slug", label="Tenant (slug)")
    awaiting_approval = django_filters.ChoiceFilter(
        choices=[("true", "Waiting for approval (request or renewal)")],
        method="filter_awaiting_approval",
        label="Approval",
        empty_label="Waiting or not",
    )

    class Meta:
        model = ClaimRequest
        fields = ["q", "state", "namespace", "device_class", "tenant", "awaiting_approval"]

    def filter_awaiting_approval(
        self, queryset: QuerySet[ClaimRequest], name: str, value: str
    ) -> QuerySet[ClaimRequest]:
        """``true``: requests pending approval and requests whose renewal waits."""
        return queryset.awaiting_approval()  # type: ignore[attr-defined]


class IdleClaimFilterSet(django_filters.FilterSet):
    """The idle claims list: the claims list's search and namespace, and why it is idle."""

    q = ResourceClaimFilterSet.base_filters["q"]
    namespace = ResourceClaimFilterSet.base_filters["namespace"]
    reason = django_filters.ChoiceFilter(
        field_name="idleness__reason",
        choices=[c for c in ClaimIdleness.Reason.choices if c[0]],
        label="Why",
        empty_label="Any reason",
    )

    class Meta:
        model = ResourceClaim
        fields = ["q", "namespace", "reason"]
