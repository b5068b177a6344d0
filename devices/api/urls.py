"""The cluster mirror's routes, registered on the one ``/api/v1/`` router (``home.api_urls``)."""

from devices.api import views

ROUTES = [
    ("nodes", views.NodeViewSet, "node"),
    ("devices", views.DeviceViewSet, "device"),
    ("device-classes", views.DeviceClassViewSet, "deviceclass"),
    ("resource-slices", views.ResourceSliceViewSet, "resourceslice"),
]
