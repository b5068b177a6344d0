"""Read-mostly admin views of the notification log and webhook deliveries."""

from __future__ import annotations

from django.contrib import admin

from notifications.models import Notification, NotificationPreference, WebhookDelivery


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = ["created_at", "event", "channel", "user", "tenant", "subject", "sent_at"]
    list_filter = ["event", "channel"]
    search_fields = ["subject", "dedupe_key", "user__username"]
    readonly_fields = [field.name for field in Notification._meta.fields]


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = ["created_at", "tenant", "event", "state", "attempts", "last_status_code"]
    list_filter = ["state", "event"]
    readonly_fields = [field.name for field in WebhookDelivery._meta.fields]


@admin.register(NotificationPreference)
class NotificationPreferenceAdmin(admin.ModelAdmin):
    list_display = ["user", "event", "email"]
    list_filter = ["event", "email"]
