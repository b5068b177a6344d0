"""Pages of the cluster mirror.

A device is addressed by its stable identity ``(driver, pool, device)``, never by its row id:
the row is replaced when its slice is re-created, the identity is not. Pool names may contain
``/``, so the pool is a ``path`` segment between the driver and the device name (neither of
which may contain one).
"""

from django.urls import path

from devices.views import device_classes, devices, nodes, telemetry, topology

urlpatterns = [
    path("nodes/", nodes.node_list, name="node-list"),
    path("nodes/<str:name>/", nodes.node_detail, name="node-detail"),
    path("nodes/<str:name>/topology/", topology.node_topology_page, name="node-topology"),
    path("devices/", devices.device_list, name="device-list"),
    path(
        "devices/<str:driver>/<path:pool>/<str:device>/",
        devices.device_detail,
        name="device-detail",
    ),
    path("device-classes/", device_classes.deviceclass_list, name="deviceclass-list"),
    path(
        "device-classes/<str:name>/", device_classes.deviceclass_detail, name="deviceclass-detail"
    ),
    path("telemetry/", telemetry.telemetry_sources, name="telemetry"),
]
