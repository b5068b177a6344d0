"""Writing rows: idempotent, ordered by resourceVersion, stable device rows."""

from __future__ import annotations

import copy

import pytest

from claims.models import ResourceClaim
from devices.cluster import Kind
from devices.mirror.store import apply_events, delete_missing, load
from devices.models import Device, ResourceSlice
from tests.mirror.conftest import fixture_objects


def h100_slice() -> dict:
    return copy.deepcopy(
        next(
            o
            for o in fixture_objects()
            if o["kind"] == "ResourceSlice"
            and o["metadata"]["name"].startswith("00000-gpu.nvidia")
            and o["spec"]["nodeName"] == "dgx-h100-01"
        )
    )


def event(type_: str, obj: dict, version: str) -> dict:
    obj = copy.deepcopy(obj)
    obj["metadata"]["resourceVersion"] = version
    return {"type": type_, "object": obj}


@pytest.mark.django_db
def test_replaying_a_batch_writes_nothing_new():
    obj = h100_slice()
    first = apply_events(Kind.RESOURCE_SLICES, [event("ADDED", obj, "10")])
    again = apply_events(Kind.RESOURCE_SLICES, [event("ADDED", obj, "10")])
    assert (first.written, again.written) == (1, 0)
    assert Device.objects.count() == 8


@pytest.mark.django_db
def test_an_older_event_never_overwrites_a_newer_row():
    obj = h100_slice()
    newer = copy.deepcopy(obj)
    newer["spec"]["devices"] = newer["spec"]["devices"][:4]
    apply_events(Kind.RESOURCE_SLICES, [event("MODIFIED", newer, "20")])
    apply_events(Kind.RESOURCE_SLICES, [event("MODIFIED", obj, "10")])
    assert ResourceSlice.objects.get().resource_version == "20"
    assert Device.objects.count() == 4


@pytest.mark.django_db
def test_device_rows_keep_their_ids_when_the_driver_republishes():
    obj = h100_slice()
    apply_events(Kind.RESOURCE_SLICES, [event("ADDED", obj, "10")])
    ids = dict(Device.objects.values_list("name", "pk"))
    obj["spec"]["devices"][0]["attributes"]["driverVersion"] = {"version": "580.126.21"}
    apply_events(Kind.RESOURCE_SLICES, [event("MODIFIED", obj, "11")])
    assert dict(Device.objects.values_list("name", "pk")) == ids
    gpu0 = Device.objects.get(name="gpu-0")
    assert gpu0.attributes["driverVersion"] == {"version": "580.126.21"}


@pytest.mark.django_db
def test_a_deleted_slice_takes_its_devices_with_it():
    obj = h100_slice()
    apply_events(Kind.RESOURCE_SLICES, [event("ADDED", obj, "10"), event("DELETED", obj, "11")])
    assert not ResourceSlice.objects.exists()
    assert not Device.objects.exists()


@pytest.mark.django_db
def test_a_claim_name_reused_by_a_new_object_replaces_the_old_row():
    claim = next(o for o in fixture_objects() if o["kind"] == "ResourceClaim")
    load([claim])
    reborn = copy.deepcopy(claim)
    reborn["metadata"]["uid"] = "11111111-2222-3333-4444-555555555555"
    apply_events(Kind.RESOURCE_CLAIMS, [event("ADDED", reborn, "999")])
    assert list(ResourceClaim.objects.values_list("uid", flat=True)) == [reborn["metadata"]["uid"]]


@pytest.mark.django_db
def test_a_relist_keeps_rows_written_by_a_newer_watch_event():
    obj = h100_slice()
    apply_events(Kind.RESOURCE_SLICES, [event("ADDED", obj, "50")])
    assert delete_missing(Kind.RESOURCE_SLICES, set(), "40") == 0
    assert delete_missing(Kind.RESOURCE_SLICES, set(), "60") == 1


@pytest.mark.django_db
def test_malformed_objects_are_stored_raw_and_flagged():
    broken = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"uid": "u-1", "name": "broken", "resourceVersion": "5"},
        "spec": {"driver": "gpu.nvidia.com", "devices": "not-a-list"},
    }
    applied = apply_events(Kind.RESOURCE_SLICES, [event("ADDED", broken, "5")])
    assert applied.malformed == 1
    row = ResourceSlice.objects.get(uid="u-1")
    assert row.raw["spec"]["devices"] == "not-a-list"
    assert "spec.pool.name is missing" in row.problems
