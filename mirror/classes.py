"""Device ↔ DeviceClass membership, decided by the allocator's CEL environment.

A device belongs to a class when every selector of the class evaluates to true for it, exactly
as the allocator filters candidates. A selector that fails to compile or raises at run time
makes the device not a member (the class page shows the error). Evaluation is cached by the
values a selector reads, so identical GPUs cost one evaluation.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from celery import shared_task
from django.db import transaction

from devices.models import Device, DeviceClass, DeviceClassMatch, ResourceSlice
from dra.cel import (
    CelCompileError,
    CelRuntimeError,
    compile_selector,
    device_input,
    selector_errors,
)
from dra.model import InvalidObject, parse_slice, selector_expressions

__all__ = ["class_selector_errors", "refresh_class_matches", "refresh_device_classes"]

CHUNK = 200


def _matching_classes(
    slice_raw: dict[str, Any], classes: list[tuple[str, tuple[str | None, ...]]]
) -> dict[str, list[str]]:
    """device name → names of the classes it satisfies."""
    try:
        parsed = parse_slice(slice_raw, str(slice_raw.get("metadata", {}).get("name", "")))
    except InvalidObject:
        return {}
    result: dict[str, list[str]] = {}
    for device in parsed.devices:
        cel_device = device_input(device, parsed.driver, False)
        names = []
        for class_name, expressions in classes:
            try:
                if all(
                    expression is not None and compile_selector(expression).matches(cel_device)
                    for expression in expressions
                ):
                    names.append(class_name)
            except (CelCompileError, CelRuntimeError):
                continue
        result[device.name] = names
    return result


def refresh_class_matches(slice_uids: Iterable[str] | None = None) -> int:
    """Recomputes the memberships of the devices of the given slices (all slices by default).

    Returns the number of membership rows written. Safe to run twice or concurrently with the
    watchers: each chunk replaces its devices' rows in one transaction.
    """
    classes = [
        (name, selector_expressions(selectors))
        for name, selectors in DeviceClass.objects.values_list("name", "selectors")
    ]
    slices = ResourceSlice.objects.all()
    if slice_uids is not None:
        slices = slices.filter(uid__in=list(slice_uids))
    written = 0
    chunk: list[tuple[int, dict[str, Any]]] = []
    for item in slices.values_list("pk", "raw").iterator(chunk_size=CHUNK):
        chunk.append(item)
        if len(chunk) >= CHUNK:
            written += _refresh_chunk(chunk, classes)
            chunk = []
    if chunk:
        written += _refresh_chunk(chunk, classes)
    if slice_uids is None:
        DeviceClassMatch.objects.exclude(device_class_name__in=[n for n, _ in classes]).delete()
    return written


@shared_task(name="devices.tasks.refresh_device_classes", ignore_result=True)
def refresh_device_classes(slice_uids: list[str] | None = None) -> int:
    """Celery task: recomputes memberships for changed slices (all when ``None``). It lives
    beside the work it runs so that the reflector can schedule it without importing the
    watcher tasks; ``mirror.tasks`` re-exports it for Celery's autodiscovery."""
    return refresh_class_matches(slice_uids)


def _refresh_chunk(
    chunk: list[tuple[int, dict[str, Any]]], classes: list[tuple[str, tuple[str | None, ...]]]
) -> int:
    slice_ids = [pk for pk, _ in chunk]
    devices = {
        (slice_id, name): pk
        for pk, slice_id, name in Device.objects.filter(
            resource_slice_id__in=slice_ids
        ).values_list("pk", "resource_slice_id", "name")
    }
    rows = [
        DeviceClassMatch(device_id=devices[(slice_id, device_name)], device_class_name=class_name)
        for slice_id, raw in chunk
        for device_name, class_names in _matching_classes(raw, classes).items()
        if (slice_id, device_name) in devices
        for class_name in class_names
    ]
    with transaction.atomic():
        DeviceClassMatch.objects.filter(device__resource_slice_id__in=slice_ids).delete()
        DeviceClassMatch.objects.bulk_create(rows, batch_size=1000, ignore_conflicts=True)
    return len(rows)


def class_selector_errors(device_class: DeviceClass) -> list[str]:
    """Compile errors of the class's selectors, for its page ("selector #1: ...")."""
    return selector_errors(selector_expressions(device_class.selectors))
