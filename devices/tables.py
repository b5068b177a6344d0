"""Tables of the cluster-mirror pages (STYLE §6), and the row annotations they need.

Every per-row number is annotated in SQL (``with_device_counts``) or fetched
once per page (``gpu_models_by_node``), so a page costs the same number of queries whatever
its size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import django_tables2 as tables
from django.db.models import (
    Count,
    OuterRef,
    QuerySet,
    Subquery,
)
from django.db.models.functions import Coalesce
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from claims.models import AllocatedDevice
from devices.filtersets import drivers_named_by
from devices.models import Device, DeviceClass, DeviceState, Node

__all__ = [
    "DeviceClassTable",
    "DeviceTable",
    "NodeTable",
    "gpu_models_by_node",
    "human_bytes",
    "state_badge",
    "with_device_counts",
]

BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]


def human_bytes(value: int | None) -> str:
    """``42949672960`` → ``"40 GiB"`` (binary units, as GPU memory is published)."""
    if value is None:
        return ""
    size = float(value)
    for unit in BYTE_UNITS:
        if abs(size) < 1024 or unit == BYTE_UNITS[-1]:
            return f"{size:.0f} {unit}" if size == int(size) else f"{size:.1f} {unit}"
        size /= 1024
    return f"{value} B"  # pragma: no cover - the loop always returns


def state_badge(state: str) -> str:
    label = DeviceState(state).label if state in DeviceState.values else state
    return format_html('<span class="badge state-{}">{}</span>', state, label)


def _holds() -> QuerySet[AllocatedDevice]:
    """Allocation results that hold the outer device; admin access holds nothing."""
    return AllocatedDevice.objects.filter(
        device=OuterRef("pk"),
        admin_access=False,
    )


def _count_per_node(devices: QuerySet[Device]) -> Coalesce:
    counted = (
        devices.filter(node_name=OuterRef("name"))
        .order_by()
        .values("node_name")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted), 0)


def with_device_counts(queryset: QuerySet[Node]) -> QuerySet[Node]:
    """Annotates ``device_count``, ``free_count``, ``allocated_count`` (shared included) and
    ``tainted_count`` from the Device rows published for each node."""
    return queryset.annotate(
        device_count=_count_per_node(Device.objects.all()),
        free_count=_count_per_node(Device.objects.free()),
        allocated_count=_count_per_node(Device.objects.held()),
        tainted_count=_count_per_node(Device.objects.tainted()),
    )


def gpu_models_by_node(node_names: Iterable[str]) -> dict[str, list[tuple[str, int]]]:
    """node → [(model, count)] of whole devices (partitions, i.e. devices with a parent, are
    left out), in one query."""
    rows = (
        Device.objects.filter(node_name__in=list(node_names), parent_uuid="")
        .exclude(model_name="")
        .order_by()
        .values("node_name", "model_name")
        .annotate(n=Count("pk"))
        .order_by("node_name", "model_name")
    )
    models: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for row in rows:
        models[row["node_name"]].append((row["model_name"], row["n"]))
    return dict(models)


def _models_html(models: list[tuple[str, int]]) -> str:
    if not models:
        return mark_safe('<span class="text-body-tertiary">—</span>')  # noqa: S308 - a constant
    return format_html_join(
        "", '<div class="text-nowrap">{} × {}</div>', ((count, model) for model, count in models)
    )


class NumberColumn(tables.Column):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("attrs", {"td": {"class": "text-end"}, "th": {"class": "text-end"}})
        super().__init__(**kwargs)


class NodeTable(tables.Table):
    """Nodes with their devices counted; set ``gpu_models`` (``gpu_models_by_node`` of the
    page's nodes) before rendering."""

    name = tables.Column(linkify=True, attrs={"td": {"class": "fw-medium text-nowrap"}})
    is_ready = tables.Column(verbose_name="Ready")
    gpus = tables.Column(verbose_name="GPUs", empty_values=(), orderable=False)
    device_count = NumberColumn(verbose_name="Devices")
    free_count = NumberColumn(verbose_name="Free")
    allocated_count = NumberColumn(verbose_name="Allocated")
    tainted_count = NumberColumn(verbose_name="Tainted")
    extended_resources = tables.Column(verbose_name="Device plugin", orderable=False)

    class Meta:
        model = Node
        fields = [
            "name",
            "is_ready",
            "gpus",
            "device_count",
            "free_count",
            "allocated_count",
            "tainted_count",
            "extended_resources",
        ]
        attrs = {"class": "table table-hover align-middle mb-0"}
        empty_text = "No node matches."

    gpu_models: dict[str, list[tuple[str, int]]] = {}

    def render_is_ready(self, record: Node) -> str:
        if not record.is_ready:
            return mark_safe('<span class="badge text-bg-danger">NotReady</span>')  # noqa: S308 - a constant
        if not record.is_schedulable:
            return mark_safe('<span class="badge text-bg-warning">Cordoned</span>')  # noqa: S308 - a constant
        return mark_safe('<span class="badge state-free">Ready</span>')  # noqa: S308 - a constant

    def render_gpus(self, record: Node) -> str:
        return _models_html(self.gpu_models.get(record.name, []))

    def render_extended_resources(self, value: dict[str, str]) -> str:
        return format_html_join(
            "", '<div class="text-nowrap"><code>{}</code>: {}</div>', sorted(value.items())
        )


class DeviceTable(tables.Table):
    """Devices with their state badge."""

    name = tables.Column(linkify=True, attrs={"td": {"class": "fw-medium text-nowrap"}})
    node_name = tables.Column(verbose_name="Node", attrs={"td": {"class": "text-nowrap"}})
    driver = tables.Column(attrs={"td": {"class": "text-nowrap small"}})
    model_name = tables.Column(verbose_name="Model")
    device_type = tables.Column(verbose_name="Type")
    memory_bytes = tables.Column(verbose_name="Memory", attrs={"td": {"class": "text-nowrap"}})
    pci_bus_id = tables.Column(
        verbose_name="PCI bus", attrs={"td": {"class": "font-monospace small"}}
    )
    state = tables.Column(verbose_name="State")

    class Meta:
        model = Device
        fields = [
            "name",
            "node_name",
            "driver",
            "model_name",
            "device_type",
            "memory_bytes",
            "pci_bus_id",
            "state",
        ]
        attrs = {"class": "table table-hover align-middle mb-0"}
        empty_text = "No device matches."

    def render_node_name(self, value: str) -> str:
        return format_html('<a href="{}">{}</a>', reverse("node-detail", args=[value]), value)

    def render_memory_bytes(self, value: int) -> str:
        return human_bytes(value)

    def render_state(self, record: Device) -> str:
        # The stored value: for a choices field django-tables2 would pass the display label.
        return state_badge(record.state)


class DeviceClassTable(tables.Table):
    """Device classes; set ``device_counts`` (class name → matching devices) before rendering."""

    name = tables.Column(linkify=True, attrs={"td": {"class": "fw-medium text-nowrap"}})
    drivers = tables.Column(verbose_name="Driver", empty_values=(), orderable=False)
    extended_resource_name = tables.Column(verbose_name="Extended resource")
    devices = NumberColumn(verbose_name="Matching devices", empty_values=(), orderable=False)

    class Meta:
        model = DeviceClass
        fields = ["name", "drivers", "extended_resource_name", "devices"]
        attrs = {"class": "table table-hover align-middle mb-0"}
        empty_text = "No device class matches."

    device_counts: dict[str, int] = {}

    def render_drivers(self, record: DeviceClass) -> str:
        names = sorted(drivers_named_by(record))
        if not names:
            return mark_safe('<span class="text-body-tertiary">not stated</span>')  # noqa: S308 - a constant
        return format_html_join(", ", "<code>{}</code>", ((name,) for name in names))

    def render_extended_resource_name(self, value: str) -> str:
        return format_html("<code>{}</code>", value)

    def render_devices(self, record: DeviceClass) -> int:
        return self.device_counts.get(record.name, 0)
