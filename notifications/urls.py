"""Notification pages: a user's choices, and a tenant's webhook."""

from django.urls import path

from notifications import views

urlpatterns = [
    path(
        "account/notifications/",
        views.notification_preferences,
        name="notification-preferences",
    ),
    path("tenants/<slug:slug>/webhook/", views.tenant_webhook, name="tenant-webhook"),
]
