"""FilterSets of the tenancy lists, shared by the HTML pages and the API (STYLE §6)."""

import django_filters

from portal.models import AuditEvent, Quota, Tenant

__all__ = ["AuditEventFilterSet", "QuotaFilterSet", "TenantFilterSet"]


class TenantFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(method="search", label="Search")
    namespace = django_filters.CharFilter(field_name="namespaces__name", label="Namespace")

    class Meta:
        model = Tenant
        fields = ["q", "namespace", "requires_approval"]

    def search(self, queryset, name, value):  # type: ignore[no-untyped-def]
        return queryset.filter(name__icontains=value) | queryset.filter(slug__icontains=value)


class QuotaFilterSet(django_filters.FilterSet):
    tenant = django_filters.CharFilter(field_name="tenant__slug", label="Tenant (slug)")
    device_class = django_filters.CharFilter(field_name="device_class_name", label="Device class")

    class Meta:
        model = Quota
        fields = ["tenant", "device_class"]


class AuditEventFilterSet(django_filters.FilterSet):
    tenant = django_filters.CharFilter(field_name="tenant__slug", label="Tenant (slug)")
    actor = django_filters.CharFilter(field_name="actor_name", label="Actor")
    object_type = django_filters.CharFilter(field_name="object_type")
    since = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")

    class Meta:
        model = AuditEvent
        fields = ["tenant", "actor", "action", "object_type", "since"]
