"""Memberships are decided once per device shape (the values a class's selectors read), and
they are what evaluating every selector on every device gives."""

from __future__ import annotations

import pytest

from devices.models import Device, DeviceClass, DeviceClassMatch, ResourceSlice
from dra.cel import CelCompileError, CelRuntimeError, compile_selector, device_input
from dra.model import parse_slice, selector_expressions
from harness.fixtures import fixture_objects
from mirror import classes as classes_module
from mirror.classes import refresh_class_matches
from mirror.store import load

pytestmark = pytest.mark.django_db


def _one_by_one() -> set[tuple[str, str, str]]:
    """(node, device, class) of every membership, every selector evaluated on every device."""
    classes = [
        (name, selector_expressions(selectors))
        for name, selectors in DeviceClass.objects.values_list("name", "selectors")
    ]
    found = set()
    for name, raw in ResourceSlice.objects.values_list("name", "raw"):
        parsed = parse_slice(raw, name)
        for device in parsed.devices:
            view = device_input(device, parsed.driver, False)
            for class_name, expressions in classes:
                try:
                    if all(
                        e is not None and compile_selector(e).matches(view) for e in expressions
                    ):
                        found.add((parsed.node_name or "", device.name, class_name))
                except (CelCompileError, CelRuntimeError):
                    continue
    return found


def _memberships() -> set[tuple[str, str, str]]:
    return set(
        DeviceClassMatch.objects.values_list(
            "device__node_name", "device__name", "device_class_name"
        )
    )


def test_memberships_by_shape_are_those_of_every_device_evaluated(monkeypatch):
    objects = fixture_objects()
    uuid_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "one-gpu-by-uuid", "uid": "class-by-uuid", "resourceVersion": "1"},
        "spec": {"selectors": []},
    }
    load(objects)
    gpu = Device.objects.filter(driver="gpu.nvidia.com", device_type="gpu").exclude(uuid="").first()
    assert gpu is not None
    # A selector reading a value unique to each device: shapes cannot be shared there.
    uuid_class["spec"]["selectors"] = [
        {"cel": {"expression": f'device.attributes["gpu.nvidia.com"].uuid == "{gpu.uuid}"'}}
    ]
    load([uuid_class])
    whole: list[int] = []
    grouped: list[int] = []
    real_whole, real_grouped = classes_module.device_input, classes_module.grouped_input

    def counting_whole(*args, **kwargs):
        whole.append(1)
        return real_whole(*args, **kwargs)

    def counting_grouped(*args, **kwargs):
        grouped.append(1)
        return real_grouped(*args, **kwargs)

    monkeypatch.setattr(classes_module, "device_input", counting_whole)
    monkeypatch.setattr(classes_module, "grouped_input", counting_grouped)
    classes_module._VERDICTS.clear()
    refresh_class_matches()
    assert _memberships() == _one_by_one()
    assert DeviceClassMatch.objects.filter(device_class_name="one-gpu-by-uuid").count() == 1
    # Every fixture selector reads single values, so no device needs its whole view; a view of
    # the values read is built for the first device of each shape, not for every device and
    # class (the uuid class alone needs one per GPU).
    assert whole == []
    gpus = Device.objects.filter(driver="gpu.nvidia.com").exclude(uuid="").count()
    assert gpus <= len(grouped) < Device.objects.count() * DeviceClass.objects.count()


def test_a_refresh_with_nothing_changed_rewrites_no_row():
    load(fixture_objects())
    refresh_class_matches()
    before = set(DeviceClassMatch.objects.values_list("pk", flat=True))
    assert before
    refresh_class_matches()
    assert set(DeviceClassMatch.objects.values_list("pk", flat=True)) == before
