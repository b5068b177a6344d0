"""The cluster mirror: a database copy of the DRA objects and the core objects they touch,
and the telemetry read from the GPUs."""

from devices.models.class_matches import DeviceClassMatch
from devices.models.device_classes import DeviceClass
from devices.models.devices import Device, DeviceState
from devices.models.inventory_changes import InventoryChange
from devices.models.mirror import MirroredObject, NamespacedQuerySet
from devices.models.namespaces import Namespace
from devices.models.nodes import Node
from devices.models.pods import Pod
from devices.models.resource_slices import ResourceSlice, SharedCounterSet
from devices.models.telemetry import (
    DeviceRollup,
    DeviceRollupQuerySet,
    DeviceSample,
    DeviceTelemetry,
    DeviceTelemetryQuerySet,
    Resolution,
    TelemetrySource,
)

__all__ = [
    "Device",
    "DeviceClass",
    "DeviceClassMatch",
    "DeviceRollup",
    "DeviceRollupQuerySet",
    "DeviceSample",
    "DeviceState",
    "DeviceTelemetry",
    "DeviceTelemetryQuerySet",
    "InventoryChange",
    "MirroredObject",
    "Namespace",
    "NamespacedQuerySet",
    "Node",
    "Pod",
    "Resolution",
    "ResourceSlice",
    "SharedCounterSet",
    "TelemetrySource",
]
