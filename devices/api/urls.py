"""The cluster mirror's routes, registered on the one ``/api/v1/`` router (``home.api_urls``)."""

from django.urls import path

from devices.api import views

ROUTES = [
    ("nodes", views.NodeViewSet, "node"),
    ("devices", views.DeviceViewSet, "device"),
    ("device-classes", views.DeviceClassViewSet, "deviceclass"),
    ("resource-slices", views.ResourceSliceViewSet, "resourceslice"),
]

# Outside the router, and before it: see DeviceUtilisationView.
PATHS = [
    path(
        "devices/<str:driver>/<path:pool>/<str:device>/utilisation/",
        views.DeviceUtilisationView.as_view(),
        name="device-utilisation",
    ),
]
