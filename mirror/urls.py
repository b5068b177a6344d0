"""The Mirror status page, and each tenant's ResourceQuota backstop."""

from django.urls import path

from mirror import views

urlpatterns = [
    path("mirror/", views.mirror_status, name="mirror-status"),
    path("tenants/<slug:slug>/backstop/", views.tenant_backstop, name="tenant-backstop"),
    path(
        "tenants/<slug:slug>/backstop/check/",
        views.tenant_backstop_check,
        name="tenant-backstop-check",
    ),
    path(
        "tenants/<slug:slug>/backstop/repair/",
        views.tenant_backstop_repair,
        name="tenant-backstop-repair",
    ),
    path(
        "tenants/<slug:slug>/backstop/switch/",
        views.tenant_backstop_switch,
        name="tenant-backstop-switch",
    ),
]
