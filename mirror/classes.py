"""Device ↔ DeviceClass membership, decided by the allocator's CEL environment.

A device belongs to a class when every selector of the class evaluates to true for it, exactly
as the allocator filters candidates. A selector that fails to compile or raises at run time
makes the device not a member (the class page shows the error). Evaluation is cached by the
values a selector reads, so identical GPUs cost one evaluation.

The watchers schedule a refresh after every slice change (its slices) and class change (all
slices), so refreshes run concurrently and in any order; each chunk's rows are written only
from classes and slices still current when it writes (``_refresh_chunk``), so whichever
refresh finishes last, the rows follow the newest classes and slices.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from celery import shared_task
from django.db import transaction

from devices.models import Device, DeviceClass, DeviceClassMatch, ResourceSlice
from dra.allocator.grouping import GroupingKey, grouped_input, grouping_key_reader
from dra.cel import (
    CelCompileError,
    CelRuntimeError,
    compile_selector,
    device_input,
)
from dra.model import InvalidObject, parse_slice, selector_expressions
from mirror.store import lock_device_writes

__all__ = ["refresh_class_matches", "refresh_device_classes"]

CHUNK = 200
ATTEMPTS = 3


# (expression, the values it reads) → whether a device with those values satisfies it: the
# 40,000 GPUs of one model share one evaluation (and one selector view) per class selector.
_VERDICTS: dict[tuple[str, tuple[Any, ...]], bool] = {}
_VERDICTS_LIMIT = 200_000
_READERS: dict[str, tuple[GroupingKey, list[tuple[str, ...]]] | None] = {}


def _key_reader(expression: str) -> tuple[GroupingKey, list[tuple[str, ...]]] | None:
    """Reads, straight from a parsed device, the values ``expression`` reads, with the paths
    they are read at (None when it reads something that needs the whole view: such a selector
    is evaluated per device)."""
    if expression not in _READERS:
        selector = compile_selector(expression)
        reads = selector.reads
        found = None
        if selector.error is None and reads is not None and reads.parsed:
            paths = sorted(reads.paths)
            reader = grouping_key_reader(paths, False)
            found = None if reader is None else (reader, paths)
        _READERS[expression] = found
    return _READERS[expression]


def _satisfies(expression: str, resource_slice: Any, device: Any, view: list[Any]) -> bool:
    """Whether the device satisfies one selector; ``view`` holds its whole selector view once
    one was built (a selector whose values are read straight from the device runs on a view of
    those values only, so one reading a ``uuid`` converts nothing else)."""
    reader = _key_reader(expression)
    key = reader[0](resource_slice, device) if reader is not None else None
    if key is not None:
        assert reader is not None
        found = _VERDICTS.get((expression, key))
        if found is not None:
            return found
        device_view = grouped_input(reader[1], key, resource_slice, device, False, True)
    else:
        if not view:
            view.append(device_input(device, resource_slice.driver, False))
        device_view = view[0]
    try:
        verdict = compile_selector(expression).matches(device_view)
    except (CelCompileError, CelRuntimeError):
        verdict = False  # an error makes the device not a member (the class page says why)
    if key is not None:
        if len(_VERDICTS) >= _VERDICTS_LIMIT:
            _VERDICTS.clear()
        _VERDICTS[(expression, key)] = verdict
    return verdict


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
        view: list[Any] = []
        result[device.name] = [
            class_name
            for class_name, expressions in classes
            if all(
                expression is not None and _satisfies(expression, parsed, device, view)
                for expression in expressions
            )
        ]
    return result


def refresh_class_matches(slice_uids: Iterable[str] | None = None) -> int:
    """Recomputes the memberships of the devices of the given slices (all slices by default).

    Returns the number of membership rows written. Safe to run twice, or concurrently with
    the watchers and other refreshes, in any order: see :func:`_refresh_chunk`.
    """
    slices = ResourceSlice.objects.order_by("pk")
    if slice_uids is not None:
        slices = slices.filter(uid__in=list(slice_uids))
    slice_ids = list(slices.values_list("pk", flat=True))
    written = 0
    for start in range(0, len(slice_ids), CHUNK):
        written += _refresh_chunk(slice_ids[start : start + CHUNK])
    if slice_uids is None:
        # One statement: the class names are those committed when it runs.
        DeviceClassMatch.objects.exclude(
            device_class_name__in=DeviceClass.objects.values("name")
        ).delete()
    return written


@shared_task(name="devices.tasks.refresh_device_classes", ignore_result=True)
def refresh_device_classes(slice_uids: list[str] | None = None) -> int:
    """Celery task: recomputes memberships for changed slices (all when ``None``). It lives
    beside the work it runs so that the reflector can schedule it without importing the
    watcher tasks; ``mirror.tasks`` re-exports it for Celery's autodiscovery."""
    return refresh_class_matches(slice_uids)


@dataclass(frozen=True)
class _Inputs:
    """What a chunk's memberships are computed from: every class and the chunk's slices, with
    the resourceVersions they were read at."""

    classes: list[tuple[str, tuple[str | None, ...]]]
    slices: list[tuple[int, dict[str, Any]]]
    versions: tuple[tuple[tuple[str, str], ...], tuple[tuple[int, str], ...]]

    @classmethod
    def read(cls, slice_ids: list[int]) -> _Inputs:
        classes = list(
            DeviceClass.objects.order_by("name").values_list(
                "name", "resource_version", "selectors"
            )
        )
        slices = list(
            ResourceSlice.objects.filter(pk__in=slice_ids)
            .order_by("pk")
            .values_list("pk", "resource_version", "raw")
        )
        return cls(
            [(name, selector_expressions(selectors)) for name, _, selectors in classes],
            [(pk, raw) for pk, _, raw in slices],
            (
                tuple((name, version) for name, version, _ in classes),
                tuple((pk, version) for pk, version, _ in slices),
            ),
        )

    @staticmethod
    def current_versions(
        slice_ids: list[int],
    ) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[int, str], ...]]:
        return (
            tuple(DeviceClass.objects.order_by("name").values_list("name", "resource_version")),
            tuple(
                ResourceSlice.objects.filter(pk__in=slice_ids)
                .order_by("pk")
                .values_list("pk", "resource_version")
            ),
        )

    def matches(self) -> dict[tuple[int, str], list[str]]:
        """(slice id, device name) → names of the classes the device satisfies."""
        return {
            (slice_id, device_name): class_names
            for slice_id, raw in self.slices
            for device_name, class_names in _matching_classes(raw, self.classes).items()
        }


def _refresh_chunk(slice_ids: list[int]) -> int:
    """Replaces the memberships of the devices of these slices.

    Devices are matched outside any lock, on what was read; the rows are written only if,
    under the device-writes lock, neither the classes nor these slices changed since (else it
    reads and matches again; after ``ATTEMPTS`` changes in a row it matches under the lock).
    A change committed after the check schedules its own refresh, whose write waits for this
    one. So the last rows written for a device always come from the newest classes and slice:
    a refresh that read before a change can no longer finish after the change's refresh and
    write over it (on the demo's first start the slices' refresh, having read no classes yet,
    erased the 238 memberships the classes' refresh had just written).
    """
    for _ in range(ATTEMPTS - 1):
        inputs = _Inputs.read(slice_ids)
        found = inputs.matches()
        with transaction.atomic():
            lock_device_writes()
            if _Inputs.current_versions(slice_ids) == inputs.versions:
                return _write(slice_ids, found)
    with transaction.atomic():  # they keep changing: match while holding the lock
        lock_device_writes()
        return _write(slice_ids, _Inputs.read(slice_ids).matches())


def _write(slice_ids: list[int], found: dict[tuple[int, str], list[str]]) -> int:
    """Makes the memberships of these slices' devices ``found``: only rows that differ are
    deleted or inserted. Returns the number of rows the devices now have."""
    devices = {
        (slice_id, name): pk
        for pk, slice_id, name in Device.objects.filter(
            resource_slice_id__any=slice_ids
        ).values_list("pk", "resource_slice_id", "name")
    }
    wanted = {
        (devices[key], class_name)
        for key, class_names in found.items()
        if key in devices
        for class_name in class_names
    }
    stored = dict(
        (((device_id, class_name), pk))
        # By the device ids just read (an index lookup), not through a join on the slice.
        for pk, device_id, class_name in DeviceClassMatch.objects.filter(
            device_id__any=list(devices.values())
        ).values_list("pk", "device_id", "device_class_name")
    )
    gone = [pk for row, pk in stored.items() if row not in wanted]
    if gone:
        DeviceClassMatch.objects.filter(pk__any=gone).delete()
    DeviceClassMatch.objects.bulk_create(
        [
            DeviceClassMatch(device_id=device_id, device_class_name=class_name)
            for device_id, class_name in wanted
            if (device_id, class_name) not in stored
        ],
        batch_size=1000,
        ignore_conflicts=True,
    )
    return len(wanted)
