"""Pages of the cluster mirror."""

from django.urls import path

from devices.views import device_classes, devices, nodes

urlpatterns = [
    path("nodes/", nodes.node_list, name="node-list"),
    path("nodes/<str:name>/", nodes.node_detail, name="node-detail"),
    path("devices/", devices.device_list, name="device-list"),
    path("devices/<int:pk>/", devices.device_detail, name="device-detail"),
    path("device-classes/", device_classes.deviceclass_list, name="deviceclass-list"),
    path(
        "device-classes/<str:name>/", device_classes.deviceclass_detail, name="deviceclass-detail"
    ),
]
