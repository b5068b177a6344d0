"""FilterSets of the cluster-mirror lists, shared by the HTML pages and the API (STYLE §6)."""

from __future__ import annotations

import re

import django_filters
from django import forms
from django.db.models import Q, QuerySet

from devices.models import Device, DeviceClass, DeviceState, Node, ResourceSlice

__all__ = [
    "search_box",
    "DeviceClassFilterSet",
    "DeviceFilterSet",
    "NodeFilterSet",
    "ResourceSliceFilterSet",
    "drivers_named_by",
]

# ``device.driver == "gpu.nvidia.com"`` (either quote style) inside a selector expression.
DRIVER_EQUALS = re.compile(r"""device\.driver\s*==\s*(["'])([^"']+)\1""")


def drivers_named_by(device_class: DeviceClass) -> set[str]:
    """Drivers a class's CEL selectors compare ``device.driver`` against, for display.

    Which devices a class matches is decided by evaluating its selectors
    (``mirror.classes``, stored as ``DeviceClassMatch`` rows); this only names the
    driver a reader should expect.
    """
    return {
        match.group(2)
        for expression in device_class.cel_expressions
        for match in DRIVER_EQUALS.finditer(expression)
    }


def search_box(placeholder: str) -> forms.TextInput:
    """The text input of a list's ``q`` filter."""
    return forms.TextInput(attrs={"type": "search", "placeholder": placeholder})


class ReadySelect(forms.NullBooleanSelect):
    def __init__(self, attrs: dict[str, str] | None = None) -> None:
        super().__init__(attrs)
        self.choices = [("unknown", "Ready or not"), ("true", "Ready"), ("false", "Not ready")]


class NodeFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(
        field_name="name",
        lookup_expr="icontains",
        label="Search nodes",
        widget=search_box("Search nodes"),
    )
    ready = django_filters.BooleanFilter(field_name="is_ready", label="Ready", widget=ReadySelect)

    class Meta:
        model = Node
        fields = ["q", "ready"]


class DeviceFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(
        method="search", label="Search devices", widget=search_box("Name, UUID or PCI bus id")
    )
    driver = django_filters.CharFilter(field_name="driver", label="Driver")
    model = django_filters.CharFilter(field_name="model_name", label="Model")
    node = django_filters.CharFilter(field_name="node_name", label="Node")
    device_class = django_filters.CharFilter(method="in_device_class", label="Device class")
    state = django_filters.ChoiceFilter(
        choices=DeviceState.choices, method="in_state", label="State", empty_label="Any state"
    )

    class Meta:
        model = Device
        fields = ["q", "driver", "model", "node", "device_class", "state"]

    def search(self, queryset: QuerySet[Device], name: str, value: str) -> QuerySet[Device]:
        """Name, UUID or PCI bus id, case-insensitively."""
        return queryset.filter(
            Q(name__icontains=value) | Q(uuid__icontains=value) | Q(pci_bus_id__icontains=value)
        )

    def in_device_class(
        self, queryset: QuerySet[Device], name: str, value: str
    ) -> QuerySet[Device]:
        """Devices every selector of the class accepts; nothing for an unknown class."""
        return queryset.filter(class_matches__device_class_name=value)

    def in_state(self, queryset: QuerySet[Device], name: str, value: str) -> QuerySet[Device]:
        return queryset.in_state(value)  # type: ignore[attr-defined]


class ResourceSliceFilterSet(django_filters.FilterSet):
    driver = django_filters.CharFilter(field_name="driver")
    pool = django_filters.CharFilter(field_name="pool_name")
    node = django_filters.CharFilter(field_name="node_name")

    class Meta:
        model = ResourceSlice
        fields = ["driver", "pool", "node"]


class DeviceClassFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(
        field_name="name",
        lookup_expr="icontains",
        label="Search device classes",
        widget=search_box("Search device classes"),
    )

    class Meta:
        model = DeviceClass
        fields = ["q"]
