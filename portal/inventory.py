"""What the tenancy domain needs of the mirrored inventory, told by the app that has it.

``portal`` sits below ``devices`` (the import contract forbids an import upwards, and an
``apps.get_model`` would only hide one): ``devices`` registers its DeviceClass query here when
it starts (``DevicesConfig.ready``), and quotas ask it which classes the cluster has.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet

__all__ = ["device_classes", "register_device_classes"]

_device_classes: Callable[[], QuerySet[Any]] | None = None


def register_device_classes(query: Callable[[], QuerySet[Any]]) -> None:
    """``query()``: every mirrored DeviceClass (a QuerySet with a ``name`` field)."""
    global _device_classes
    _device_classes = query


def device_classes() -> QuerySet[Any]:
    """The mirrored DeviceClasses (a QuerySet: filter it, or use it in a subquery)."""
    if _device_classes is None:
        raise RuntimeError("the devices app has not registered its DeviceClass query")
    return _device_classes()
