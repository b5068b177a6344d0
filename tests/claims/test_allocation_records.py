"""The allocation history follows the cluster through the real mirror path (emulator → mirror):
a record opens per allocated device, closes when the claim is deallocated or deleted, and a
relist never opens one twice."""

from __future__ import annotations

import datetime

import pytest
from django.core.management import call_command

from claims.capacity.index import index
from claims.models import AllocationRecord
from devices.models import Device, ResourceSlice
from kube.kinds import Kind
from mirror.store import apply_events

pytestmark = pytest.mark.django_db

TWO_H100 = {
    "devices": {
        "requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}]
    }
}
ALLOCATED_AT = "2026-03-02T10:00:00Z"


def allocate(cluster, name="train", namespace="gpu-test1", timestamp=ALLOCATED_AT):
    """Creates a claim in the emulator and allocates it, as a scheduler would."""
    placement = index().place(index().parse(namespace, name, TWO_H100))
    claim = cluster.create(
        Kind.RESOURCE_CLAIMS,
        {"metadata": {"name": name, "namespace": namespace}, "spec": TWO_H100},
    )
    allocation = dict(placement.allocation)
    if timestamp:
        allocation["allocationTimestamp"] = timestamp
    claim["status"] = {"allocation": allocation}
    return cluster.replace_status(Kind.RESOURCE_CLAIMS, claim)


def records_of(claim):
    return AllocationRecord.objects.filter(claim_uid=claim["metadata"]["uid"]).order_by("pk")


def test_an_allocated_claim_opens_one_record_per_device(team_a, live):
    _, cluster, resync = live
    claim = allocate(cluster)
    resync()
    records = list(records_of(claim))
    assert len(records) == 2
    assert {r.device_name for r in records} == {
        d["device"] for d in claim["status"]["allocation"]["devices"]["results"]
    }
    for record in records:
        assert (record.namespace, record.claim_name) == ("gpu-test1", "train")
        assert (record.tenant, record.tenant_name, record.tenant_slug) == (
            team_a,
            "Team A",
            "team-a",
        )
        assert (record.request, record.device_class) == ("gpus", "gpu.nvidia.com")
        device = Device.objects.get(
            driver=record.driver, pool_name=record.pool, name=record.device_name
        )
        assert (record.model_name, record.memory_bytes) == (device.model_name, device.memory_bytes)
        assert record.model_name.startswith("NVIDIA")
        assert record.started_at == datetime.datetime(2026, 3, 2, 10, tzinfo=datetime.UTC)
        assert record.ended_at is None
        assert not record.admin_access


def test_an_allocation_without_a_timestamp_starts_when_first_seen(team_a, live):
    _, cluster, resync = live
    before = datetime.datetime.now(datetime.UTC)
    claim = allocate(cluster, timestamp="")
    resync()
    assert all(record.started_at >= before for record in records_of(claim))


def test_relisting_twice_opens_nothing_twice(team_a, live):
    _, cluster, resync = live
    claim = allocate(cluster)
    resync()
    resync()
    AllocationRecord.objects.filter(claim_uid=claim["metadata"]["uid"]).update(model_name="")
    resync()  # a relist that rewrites every row
    assert records_of(claim).count() == 2
    assert records_of(claim).open().count() == 2


def test_a_deallocated_claim_closes_its_records(team_a, live):
    _, cluster, resync = live
    claim = allocate(cluster)
    resync()
    claim = cluster.get(Kind.RESOURCE_CLAIMS, "train", "gpu-test1")
    claim["status"] = {}
    cluster.replace_status(Kind.RESOURCE_CLAIMS, claim)
    resync()
    assert records_of(claim).count() == 2
    assert not records_of(claim).open().exists()


def test_a_deleted_claim_closes_its_records_when_a_relist_no_longer_has_it(team_a, live):
    _, cluster, resync = live
    claim = allocate(cluster)
    resync()
    cluster.delete(Kind.RESOURCE_CLAIMS, "train", "gpu-test1")
    resync()
    assert [r.ended_at is not None for r in records_of(claim)] == [True, True]


def test_a_deletion_event_from_the_watch_closes_its_records(team_a, live):
    _, cluster, resync = live
    claim = allocate(cluster)
    resync()
    cluster.delete(Kind.RESOURCE_CLAIMS, "train", "gpu-test1")
    apply_events(Kind.RESOURCE_CLAIMS, [{"type": "DELETED", "object": claim}])
    assert not records_of(claim).open().exists()
    apply_events(Kind.RESOURCE_CLAIMS, [{"type": "DELETED", "object": claim}])  # replayed
    assert records_of(claim).count() == 2


def test_a_reallocated_claim_closes_the_old_devices_and_opens_the_new(team_a, live):
    _, cluster, resync = live
    claim = allocate(cluster)
    resync()
    old = set(records_of(claim).values_list("device_name", flat=True))
    claim = cluster.get(Kind.RESOURCE_CLAIMS, "train", "gpu-test1")
    claim["status"] = {}
    claim = cluster.replace_status(Kind.RESOURCE_CLAIMS, claim)
    resync()
    placement = index().place(index().parse("gpu-test1", "again", TWO_H100))
    claim["status"] = {"allocation": placement.allocation}
    cluster.replace_status(Kind.RESOURCE_CLAIMS, claim)
    resync()
    assert records_of(claim).count() == 4
    assert (
        set(records_of(claim).exclude(ended_at=None).values_list("device_name", flat=True)) == old
    )
    assert records_of(claim).open().count() == 2


def test_a_record_opened_before_its_device_was_mirrored_learns_its_model(team_a, live):
    _, cluster, resync = live
    claim = allocate(cluster)
    resync()
    # As when the claim is mirrored before its slice: the devices are not there yet.
    ResourceSlice.objects.all().delete()
    records_of(claim).update(model_name="", memory_bytes=0)
    resync()  # the slices arrive: their devices are inserted
    assert all(r.model_name.startswith("NVIDIA") and r.memory_bytes for r in records_of(claim))


def test_slices_written_again_without_new_devices_leave_results_and_records_alone(team_a, live):
    """A slice update that keeps its devices (labels, annotations, a new resourceVersion) does
    not rewrite the allocation results or records of its pool: those writes made the slice and
    claim watchers deadlock each other under load."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from claims.models import AllocatedDevice

    _, cluster, resync = live
    allocate(cluster)
    resync()
    linked = dict(AllocatedDevice.objects.values_list("pk", "device_id"))
    assert any(linked.values())
    slices = list(ResourceSlice.objects.values_list("raw", flat=True))
    for raw in slices:
        raw["metadata"]["resourceVersion"] = str(int(raw["metadata"]["resourceVersion"]) + 10**6)
        raw["metadata"].setdefault("labels", {})["touched"] = "yes"
    events = [{"type": "MODIFIED", "object": raw} for raw in slices]
    with CaptureQueriesContext(connection) as captured:
        applied = apply_events(Kind.RESOURCE_SLICES, events)
    assert applied.written == len(slices)
    writes = [
        q["sql"]
        for q in captured
        if q["sql"].startswith("UPDATE")
        and ("claims_allocateddevice" in q["sql"] or "claims_allocationrecord" in q["sql"])
    ]
    assert writes == []
    assert dict(AllocatedDevice.objects.values_list("pk", "device_id")) == linked
    assert ResourceSlice.objects.filter(raw__metadata__labels__touched="yes").count() == len(slices)


def test_the_backfill_opens_records_for_allocated_claims_that_have_none(team_a, live, capsys):
    _, cluster, resync = live
    claim = allocate(cluster)
    resync()
    held = AllocationRecord.objects.open().count()
    assert held >= 2  # the fixture cluster's allocated claims have records too
    AllocationRecord.objects.all().delete()
    call_command("backfill_allocation_records")
    call_command("backfill_allocation_records")
    assert AllocationRecord.objects.open().count() == held
    assert records_of(claim).count() == 2
    assert f"Opened {held} allocation records, closed 0." in capsys.readouterr().out


def test_the_backfill_closes_records_of_claims_the_mirror_no_longer_holds(team_a, live):
    _, cluster, resync = live
    claim = allocate(cluster)
    resync()
    AllocationRecord.objects.filter(pk=records_of(claim)[0].pk).update(claim_uid="vanished")
    call_command("backfill_allocation_records")
    assert not AllocationRecord.objects.filter(claim_uid="vanished").open().exists()
    assert records_of(claim).open().count() == 2  # its lost record opened again
