"""Django admin of telemetry sources (portal admins add, change and switch them off here)."""

from __future__ import annotations

from django.contrib import admin

from devices.models import TelemetrySource


@admin.register(TelemetrySource)
class TelemetrySourceAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "enabled", "interval_seconds", "last_success_at", "last_error")
    list_filter = ("kind", "enabled")
    search_fields = ("name", "url")
    readonly_fields = (
        "last_attempt_at",
        "last_success_at",
        "last_error",
        "last_duration_ms",
        "last_sample_count",
        "last_unmatched_count",
    )
    fieldsets = (
        (None, {"fields": ("name", "kind", "enabled", "interval_seconds", "timeout_seconds")}),
        ("Prometheus", {"fields": ("url",)}),
        (
            "Exporters",
            {
                "fields": ("exporter_targets", "exporter_port"),
                "description": "Leave the targets empty to scrape the exporter pods (or GPU "
                "nodes) the mirror knows, on the port below.",
            },
        ),
        ("Last cycle", {"fields": readonly_fields}),
    )
