"""Device ↔ class memberships follow every slice and class change, whatever the order in which
the two watchers see them.

Each watcher schedules a membership refresh once its change commits (a Celery task; in process
here, as in the demo). On the demo's failing first start the slices' refresh had read the
class list, still empty, when the classes arrived; the classes' refresh wrote 238 memberships,
then the slices' refresh finished and erased them all. These tests make the other watcher's
work happen exactly there: while a refresh is matching devices (at the first slice it parses),
in one thread, so the interleaving is the same on every run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from devices.models import DeviceClassMatch
from kube.kinds import Kind
from mirror import classes as classes_module
from mirror.classes import refresh_class_matches
from mirror.reflector import Reflector

pytestmark = pytest.mark.django_db(transaction=True)

H100_NODE = "dgx-h100-01"


@pytest.fixture
def meanwhile(monkeypatch) -> Callable[[Callable[[], object]], None]:
    """``meanwhile(action)``: ``action`` runs once, when the next membership refresh has read
    what it matches and starts matching (its first parsed slice)."""
    pending: list[Callable[[], object]] = []
    parse = classes_module.parse_slice

    def parse_after(*args, **kwargs):
        if pending:
            pending.pop()()
        return parse(*args, **kwargs)

    monkeypatch.setattr(classes_module, "parse_slice", parse_after)
    return pending.append


def memberships() -> set[tuple[str, str, str, str]]:
    return set(
        DeviceClassMatch.objects.values_list(
            "device__driver", "device__pool_name", "device__name", "device_class_name"
        )
    )


def assert_as_computed_afresh() -> Counter[str]:
    """The memberships are what a refresh from the rows as they stand gives; returns their
    count per class."""
    found = memberships()
    refresh_class_matches()
    assert found == memberships()
    return Counter(name for *_, name in found)


def h100_slice(cluster) -> dict:
    items, _ = cluster.list_all(
        Kind.RESOURCE_SLICES, field_selector=f"spec.nodeName={H100_NODE},spec.driver=gpu.nvidia.com"
    )
    return items[0]


def test_classes_arriving_while_the_slices_are_matched_leave_every_membership(cluster, meanwhile):
    meanwhile(Reflector(Kind.DEVICE_CLASSES, cluster).relist)
    Reflector(Kind.RESOURCE_SLICES, cluster).relist()
    counts = assert_as_computed_afresh()
    assert counts["gpu.nvidia.com"] == 24
    assert counts["mig.nvidia.com"] == 200


def test_slices_arriving_before_the_classes_are_matched_once_the_classes_come(cluster):
    Reflector(Kind.RESOURCE_SLICES, cluster).relist()
    assert not memberships()
    Reflector(Kind.DEVICE_CLASSES, cluster).relist()
    counts = assert_as_computed_afresh()
    assert counts["gpu.nvidia.com"] == 24


def test_a_slice_changing_while_the_classes_are_matched_is_matched_as_it_now_is(cluster, meanwhile):
    slices = Reflector(Kind.RESOURCE_SLICES, cluster)
    slices.relist()
    victim = h100_slice(cluster)
    gpu = victim["spec"]["devices"][0]

    def switch_to_passthrough() -> None:  # the driver republishes gpu-0 as a VFIO device
        gpu["attributes"]["type"] = {"string": "vfio"}
        cluster.replace(Kind.RESOURCE_SLICES, victim)
        slices.relist()

    meanwhile(switch_to_passthrough)
    Reflector(Kind.DEVICE_CLASSES, cluster).relist()
    counts = assert_as_computed_afresh()
    assert counts["gpu.nvidia.com"] == 23
    classes_of_gpu = {
        c for _, pool, name, c in memberships() if (pool, name) == (H100_NODE, "gpu-0")
    }
    assert classes_of_gpu == {"vfio.gpu.nvidia.com"}


@pytest.mark.parametrize("change", ["narrowed", "deleted"])
def test_a_class_changing_while_the_slices_are_matched_is_matched_as_it_now_is(
    cluster, meanwhile, change
):
    classes = Reflector(Kind.DEVICE_CLASSES, cluster)
    classes.relist()
    slices = Reflector(Kind.RESOURCE_SLICES, cluster)
    slices.relist()
    assert assert_as_computed_afresh()["gpu.nvidia.com"] == 24

    def change_the_class() -> None:
        if change == "deleted":
            cluster.delete(Kind.DEVICE_CLASSES, "gpu.nvidia.com")
        else:
            gpu = cluster.get(Kind.DEVICE_CLASSES, "gpu.nvidia.com")
            gpu["spec"]["selectors"].append(
                {
                    "cel": {
                        "expression": "device.attributes['gpu.nvidia.com'].architecture == 'Hopper'"
                    }
                }
            )
            cluster.replace(Kind.DEVICE_CLASSES, gpu)
        classes.relist()

    meanwhile(change_the_class)
    cluster.delete(Kind.RESOURCE_SLICES, h100_slice(cluster)["metadata"]["name"])
    slices.relist()  # a slice went: every device is matched again
    counts = assert_as_computed_afresh()
    assert counts["gpu.nvidia.com"] == (8 if change == "narrowed" else 0)
    assert counts["mig.nvidia.com"] == 200
