"""FilterSets of the tenancy lists, shared by the HTML pages and the API (STYLE §6)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import django_filters
from django import forms
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from portal.models import AuditEvent, Quota, Tenant

__all__ = ["AuditEventFilterSet", "QuotaFilterSet", "TenantFilterSet"]


class TenantFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(method="search", label="Search")
    namespace = django_filters.CharFilter(field_name="namespaces__name", label="Namespace")

    class Meta:
        model = Tenant
        fields = ["q", "namespace", "requires_approval"]

    def search(self, queryset: QuerySet[Tenant], name: str, value: str) -> QuerySet[Tenant]:
        return queryset.filter(name__icontains=value) | queryset.filter(slug__icontains=value)


class QuotaFilterSet(django_filters.FilterSet):
    tenant = django_filters.CharFilter(field_name="tenant__slug", label="Tenant (slug)")
    device_class = django_filters.CharFilter(field_name="device_class_name", label="Device class")

    class Meta:
        model = Quota
        fields = ["tenant", "device_class"]


def audit_tenants(request: HttpRequest | None) -> QuerySet[Tenant]:
    """Tenants whose audit events the user may filter on: the same rule as
    ``AuditEvent.objects.visible_to`` (another tenant is an invalid choice, never a filter)."""
    user = getattr(request, "user", None)
    if user is None:
        return Tenant.objects.none()
    return Tenant.objects.administered_by(user).order_by("name")


class MomentField(forms.Field):
    """A date (``2025-03-01``) or an ISO 8601 time (``2025-03-01T12:00:00Z``); a time without
    an offset is in the portal's time zone."""

    default_error_messages = {"invalid": "Enter a date (YYYY-MM-DD) or an ISO 8601 time."}

    def to_python(self, value: Any) -> dt.date | dt.datetime | None:
        if value in self.empty_values:
            return None
        text = str(value).strip()
        try:
            # A date first: parse_datetime would read "2025-03-01" as its midnight.
            day = parse_date(text)
            if day is not None:
                return day
            moment = parse_datetime(text)
            if moment is None:
                raise ValueError(text)
        except ValueError:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid") from None
        return timezone.make_aware(moment) if timezone.is_naive(moment) else moment


# The page picks days; the API may give times as well (the same field parses both).
DATE_INPUT = forms.TextInput(attrs={"type": "date"})


class MomentFilter(django_filters.Filter):
    """``created_at`` from (``gte``) or to (``lte``) a moment; a date as ``to`` takes in the
    whole day."""

    field_class = MomentField

    def filter(self, qs: QuerySet[Any], value: dt.date | dt.datetime | None) -> QuerySet[Any]:
        if value is None:
            return qs
        if isinstance(value, dt.datetime):
            return qs.filter(**{f"{self.field_name}__{self.lookup_expr}": value})
        try:
            start = timezone.make_aware(dt.datetime.combine(value, dt.time.min))
            if self.lookup_expr == "gte":
                return qs.filter(**{f"{self.field_name}__gte": start})
            return qs.filter(**{f"{self.field_name}__lt": start + dt.timedelta(days=1)})
        except OverflowError:  # the first or last day a datetime can hold: no bound
            return qs


class AuditEventFilterSet(django_filters.FilterSet):
    """The audit log page, its CSV export and ``/api/v1/audit-events/``.

    Unlike the other lists, an invalid value (another tenant's slug, a malformed date) matches
    nothing on the page instead of being dropped: a dropped filter would show more than asked.
    The API answers 400 for it (``toolkit.api.filters.FilterBackend``).
    """

    actor = django_filters.CharFilter(
        field_name="actor_name", lookup_expr="iexact", label="Actor (username)"
    )
    action = django_filters.ChoiceFilter(
        choices=AuditEvent.Action.choices, label="Action", empty_label="Any action"
    )
    tenant = django_filters.ModelChoiceFilter(
        queryset=audit_tenants,
        field_name="tenant",
        to_field_name="slug",
        label="Tenant (slug)",
        empty_label="Any tenant",
    )
    object_type = django_filters.CharFilter(field_name="object_type", label="Object type")
    object = django_filters.CharFilter(method="search_object", label="Object (id or name)")
    since = MomentFilter(
        field_name="created_at", lookup_expr="gte", label="From", widget=DATE_INPUT
    )
    until = MomentFilter(field_name="created_at", lookup_expr="lte", label="To", widget=DATE_INPUT)

    class Meta:
        model = AuditEvent
        fields = ["actor", "action", "tenant", "object_type", "object", "since", "until"]

    def filter_queryset(self, queryset: QuerySet[AuditEvent]) -> QuerySet[AuditEvent]:
        if not self.form.is_valid():
            return queryset.none()
        return super().filter_queryset(queryset)

    def search_object(
        self, queryset: QuerySet[AuditEvent], name: str, value: str
    ) -> QuerySet[AuditEvent]:
        """The object's id exactly, or words of its name."""
        return queryset.filter(Q(object_id=value) | Q(object_repr__icontains=value))
