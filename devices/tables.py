"""Tables of the cluster-mirror pages (STYLE §6).

Per-row numbers come from QuerySet methods (``Node.objects.with_device_counts()``,
``DeviceClass.objects.with_device_counts()``) or are fetched once per page
(``Node.objects.gpu_models()``), so a page costs the same number of queries whatever its size.
"""

from __future__ import annotations

from typing import Any

import django_tables2 as tables
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import SafeString, mark_safe

from devices.filtersets import drivers_named_by
from devices.models import Device, DeviceClass, DeviceState, Node

__all__ = [
    "DeviceClassTable",
    "DeviceTable",
    "NodeTable",
    "human_bytes",
    "state_badge",
]

BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]


_EMPTY = "—"  # django-tables2's default for an empty cell


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


def state_badge(state: str, reason: str = "") -> SafeString:
    """The state's badge, and why the device is in it (``Device.state_reason``) beneath."""
    label = DeviceState(state).label if state in DeviceState.values else state
    badge = format_html('<span class="badge state-{}">{}</span>', state, label)
    if not reason:
        return badge
    return format_html(
        '{}<div class="state-reason small text-body-secondary" title="{}">{}</div>',
        badge,
        reason,
        reason,
    )


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
    """Nodes annotated by ``Node.objects.with_device_counts()``; pass ``gpu_models``
    (``Node.objects.gpu_models()`` of the page's nodes) before rendering."""

    name = tables.Column(linkify=True, attrs={"td": {"class": "fw-medium text-nowrap"}})
    is_ready = tables.Column(verbose_name="Ready")
    gpus = tables.Column(verbose_name="GPUs", empty_values=(), orderable=False)
    device_count = NumberColumn(verbose_name="Devices")
    free_count = NumberColumn(verbose_name="Free")
    allocated_count = NumberColumn(verbose_name="Allocated")
    shared_count = NumberColumn(verbose_name="Shared")
    blocked_count = NumberColumn(verbose_name="Blocked")
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
            "shared_count",
            "blocked_count",
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

    @property
    def rows_html(self) -> SafeString:
        """The page's rows as django-tables2 renders them, in one pass (see
        ``DeviceTable.rows_html``; ``tests/devices/test_device_rows_html.py`` compares them)."""
        rows = []
        for number, row in enumerate(self.paginated_rows):
            node: Any = row.record
            counts = format_html_join(
                "",
                '<td class="text-end">{}</td>',
                (
                    (_EMPTY if value is None else value,)
                    for value in (
                        node.device_count,
                        node.free_count,
                        node.allocated_count,
                        node.shared_count,
                        node.blocked_count,
                        node.tainted_count,
                    )
                ),
            )
            resources = node.extended_resources
            rows.append(
                format_html(
                    '<tr class="{}"><td class="fw-medium text-nowrap"><a href="{}">{}</a></td>'
                    "<td >{}</td><td >{}</td>{}<td >{}</td></tr>",
                    "odd" if number % 2 else "even",
                    node.get_absolute_url(),
                    node.name,
                    self.render_is_ready(node),
                    self.render_gpus(node),
                    counts,
                    _EMPTY
                    if resources is None or resources == ""
                    else self.render_extended_resources(resources),
                )
            )
        return mark_safe("".join(rows))  # noqa: S308 - each row is built by format_html


class DeviceTable(tables.Table):
    """Devices with their state badge and the reason for it."""

    name = tables.Column(linkify=True, attrs={"td": {"class": "fw-medium text-nowrap"}})
    node_name = tables.Column(verbose_name="Node", attrs={"td": {"class": "text-nowrap"}})
    driver = tables.Column(attrs={"td": {"class": "text-nowrap small"}})
    model_name = tables.Column(verbose_name="Model", attrs={"td": {"class": "text-nowrap"}})
    device_type = tables.Column(verbose_name="Type")
    memory_bytes = tables.Column(verbose_name="Memory", attrs={"td": {"class": "text-nowrap"}})
    pci_bus_id = tables.Column(
        verbose_name="PCI bus", attrs={"td": {"class": "font-monospace small"}}
    )
    state = tables.Column(verbose_name="State", attrs={"td": {"class": "state-cell"}})

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
        return state_badge(record.state, record.state_reason)

    @property
    def rows_html(self) -> SafeString:
        """The page's rows as django-tables2 renders them (``includes/table_body.html`` uses
        this when a table has it), built here in one pass: its generic cell machinery (column
        attributes, accessors, signatures per cell) was most of a 50-row page's time.
        ``tests/devices/test_device_rows_html.py`` compares the two."""
        rows = []
        for number, row in enumerate(self.paginated_rows):
            device: Device = row.record
            rows.append(
                format_html(
                    '<tr class="{}"><td class="fw-medium text-nowrap"><a href="{}">{}</a></td>'
                    '<td class="text-nowrap">{}</td><td class="small text-nowrap">{}</td>'
                    '<td class="text-nowrap">{}</td><td >{}</td><td class="text-nowrap">{}</td>'
                    '<td class="font-monospace small">{}</td><td class="state-cell">{}</td></tr>',
                    "odd" if number % 2 else "even",
                    device.get_absolute_url(),
                    device.name or _EMPTY,
                    format_html(
                        '<a href="{}">{}</a>',
                        reverse("node-detail", args=[device.node_name]),
                        device.node_name,
                    )
                    if device.node_name
                    else _EMPTY,
                    device.driver or _EMPTY,
                    device.model_name or _EMPTY,
                    device.device_type or _EMPTY,
                    human_bytes(device.memory_bytes) if device.memory_bytes is not None else _EMPTY,
                    device.pci_bus_id or _EMPTY,
                    state_badge(device.state, device.state_reason),
                )
            )
        return mark_safe("".join(rows))  # noqa: S308 - each row is built by format_html


class DeviceClassTable(tables.Table):
    """Device classes annotated by ``DeviceClass.objects.with_device_counts()``."""

    name = tables.Column(linkify=True, attrs={"td": {"class": "fw-medium text-nowrap"}})
    drivers = tables.Column(verbose_name="Driver", empty_values=(), orderable=False)
    extended_resource_name = tables.Column(verbose_name="Extended resource")
    matching_device_count = NumberColumn(verbose_name="Matching devices")
    free_device_count = NumberColumn(verbose_name="Free")

    class Meta:
        model = DeviceClass
        fields = [
            "name",
            "drivers",
            "extended_resource_name",
            "matching_device_count",
            "free_device_count",
        ]
        attrs = {"class": "table table-hover align-middle mb-0"}
        empty_text = "No device class matches."

    def render_drivers(self, record: DeviceClass) -> str:
        names = sorted(drivers_named_by(record))
        if not names:
            return mark_safe('<span class="text-body-tertiary">not stated</span>')  # noqa: S308 - a constant
        return format_html_join(", ", "<code>{}</code>", ((name,) for name in names))

    def render_extended_resource_name(self, value: str) -> str:
        return format_html("<code>{}</code>", value)

    def render_matching_device_count(self, record: DeviceClass) -> str:
        url = reverse("device-list") + "?" + urlencode({"device_class": record.name})
        return format_html('<a href="{}">{}</a>', url, record.matching_device_count)
