"""Writing rows: idempotent, ordered by resourceVersion, stable device rows."""

from __future__ import annotations

import copy

import pytest

from claims.models import ResourceClaim
from devices.models import Device, ResourceSlice
from harness.fixtures import fixture_objects
from kube.kinds import Kind
from mirror.store import apply_events, delete_missing, load


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


def claim_on(
    slice_obj: dict, device: str, *, uid: str, consumers: int = 1, admin: bool = False
) -> dict:
    result = {
        "request": "gpu",
        "driver": slice_obj["spec"]["driver"],
        "pool": slice_obj["spec"]["pool"]["name"],
        "device": device,
    }
    if admin:
        result["adminAccess"] = True
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "uid": uid,
            "name": f"claim-{uid}",
            "namespace": "team-a-dev",
            "resourceVersion": "1",
        },
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]
            }
        },
        "status": {
            "allocation": {"devices": {"results": [result]}},
            "reservedFor": [
                {"resource": "pods", "name": f"p{i}", "uid": f"u{i}"} for i in range(consumers)
            ],
        },
    }


def state_of(name: str) -> str:
    return Device.objects.get(name=name).state


@pytest.mark.django_db
def test_a_devices_state_follows_the_claims_that_hold_it():
    gpus = h100_slice()
    apply_events(Kind.RESOURCE_SLICES, [event("ADDED", gpus, "10")])
    assert state_of("gpu-0") == "free"

    claim = claim_on(gpus, "gpu-0", uid="c-1")
    apply_events(Kind.RESOURCE_CLAIMS, [event("ADDED", claim, "11")])
    assert state_of("gpu-0") == "allocated"

    # A claim reserved for two pods holds its device whole: allocated, and the reason says so.
    shared = claim_on(gpus, "gpu-0", uid="c-1", consumers=2)
    apply_events(Kind.RESOURCE_CLAIMS, [event("MODIFIED", shared, "12")])
    device = Device.objects.get(name="gpu-0")
    assert (device.state, device.state_reason) == (
        "allocated",
        "held by 1 claim, reserved for 2 consumers (shared claim)",
    )

    apply_events(Kind.RESOURCE_CLAIMS, [event("DELETED", shared, "13")])
    assert state_of("gpu-0") == "free"


@pytest.mark.django_db
def test_admin_access_holds_nothing_and_a_taint_wins():
    gpus = h100_slice()
    apply_events(Kind.RESOURCE_SLICES, [event("ADDED", gpus, "10")])
    apply_events(
        Kind.RESOURCE_CLAIMS,
        [
            event("ADDED", claim_on(gpus, "gpu-1", uid="admin", admin=True), "11"),
            event("ADDED", claim_on(gpus, "gpu-2", uid="held"), "12"),
        ],
    )
    assert state_of("gpu-1") == "free"
    gpus["spec"]["devices"][2]["taints"] = [
        {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}
    ]
    apply_events(Kind.RESOURCE_SLICES, [event("MODIFIED", gpus, "13")])
    assert state_of("gpu-2") == "tainted"
    assert Device.objects.allocated().filter(name="gpu-2").exists()  # still held


@pytest.mark.django_db
def test_devices_published_after_their_claims_get_the_right_state():
    gpus = h100_slice()
    apply_events(Kind.RESOURCE_CLAIMS, [event("ADDED", claim_on(gpus, "gpu-3", uid="c"), "5")])
    apply_events(Kind.RESOURCE_SLICES, [event("ADDED", gpus, "10")])
    assert state_of("gpu-3") == "allocated"


@pytest.mark.django_db
def test_a_relist_that_drops_a_claim_frees_its_device():
    gpus = h100_slice()
    apply_events(Kind.RESOURCE_SLICES, [event("ADDED", gpus, "10")])
    apply_events(Kind.RESOURCE_CLAIMS, [event("ADDED", claim_on(gpus, "gpu-4", uid="c"), "11")])
    delete_missing(Kind.RESOURCE_CLAIMS, set(), "20")
    assert state_of("gpu-4") == "free"


@pytest.mark.django_db
def test_a_metadata_only_claim_update_leaves_its_result_rows_alone():
    from claims.models import AllocatedDevice

    gpus = h100_slice()
    apply_events(Kind.RESOURCE_SLICES, [event("ADDED", gpus, "10")])
    claim = claim_on(gpus, "gpu-5", uid="c")
    apply_events(Kind.RESOURCE_CLAIMS, [event("ADDED", claim, "11")])
    row = AllocatedDevice.objects.get()
    claim["metadata"]["labels"] = {"team": "a"}
    apply_events(Kind.RESOURCE_CLAIMS, [event("MODIFIED", claim, "12")])
    assert AllocatedDevice.objects.get().pk == row.pk
    assert ResourceClaim.objects.get().raw["metadata"]["labels"] == {"team": "a"}
    assert state_of("gpu-5") == "allocated"


@pytest.mark.django_db
def test_an_allocation_result_links_its_device_even_when_the_claim_arrives_first():
    obj = h100_slice()
    claim = claim_on(obj, "gpu-0", uid="c-1")
    apply_events(Kind.RESOURCE_CLAIMS, [event("ADDED", claim, "5")])
    result = ResourceClaim.objects.get().allocated_devices.get()
    assert result.device is None
    apply_events(Kind.RESOURCE_SLICES, [event("ADDED", obj, "10")])
    result.refresh_from_db()
    assert (result.device.pool_name, result.device.name) == (obj["spec"]["pool"]["name"], "gpu-0")


@pytest.mark.django_db
def test_a_recreated_slice_relinks_the_results_that_name_its_devices():
    obj = h100_slice()
    apply_events(Kind.RESOURCE_SLICES, [event("ADDED", obj, "10")])
    apply_events(Kind.RESOURCE_CLAIMS, [event("ADDED", claim_on(obj, "gpu-3", uid="c-1"), "11")])
    apply_events(Kind.RESOURCE_SLICES, [event("DELETED", obj, "12")])
    result = ResourceClaim.objects.get().allocated_devices.get()
    assert result.device is None
    recreated = copy.deepcopy(obj)
    recreated["metadata"]["uid"] = "recreated-slice"
    apply_events(Kind.RESOURCE_SLICES, [event("ADDED", recreated, "13")])
    result.refresh_from_db()
    assert result.device.resource_slice.uid == "recreated-slice"
    assert result.device.name == "gpu-3"


@pytest.mark.django_db
def test_a_claim_row_links_the_tenant_owning_its_namespace(alice):
    from portal.models import TenantNamespace

    apply_events(
        Kind.RESOURCE_CLAIMS, [event("ADDED", claim_on(h100_slice(), "gpu-0", uid="c"), "5")]
    )
    claim = ResourceClaim.objects.get()
    assert claim.tenant == TenantNamespace.objects.get(name="team-a-dev").tenant


@pytest.mark.django_db
def test_a_metadata_only_slice_update_leaves_its_devices_alone():
    obj = h100_slice()
    apply_events(Kind.RESOURCE_SLICES, [event("ADDED", obj, "10")])
    uid = obj["metadata"]["uid"]
    # A state written by hand shows whether the update recomputed the pool's states.
    Device.objects.filter(name="gpu-0").update(state="blocked")
    obj["metadata"]["labels"] = {"edited": "yes"}
    applied = apply_events(Kind.RESOURCE_SLICES, [event("MODIFIED", obj, "11")])
    assert (applied.written, applied.same_spec) == (1, {uid})
    stored = ResourceSlice.objects.get()
    assert (stored.resource_version, stored.raw["metadata"]["labels"]) == ("11", {"edited": "yes"})
    assert Device.objects.get(name="gpu-0").state == "blocked"  # not rewritten, not recomputed

    obj["spec"]["devices"][0]["attributes"]["driverVersion"] = {"version": "580.126.21"}
    applied = apply_events(Kind.RESOURCE_SLICES, [event("MODIFIED", obj, "12")])
    assert applied.same_spec == set()
    gpu = Device.objects.get(name="gpu-0")
    assert gpu.attributes["driverVersion"] == {"version": "580.126.21"}
    assert gpu.state == "free"  # a spec change recomputes the pool


@pytest.mark.django_db
def test_a_slice_stored_without_a_digest_takes_the_whole_path():
    obj = h100_slice()
    apply_events(Kind.RESOURCE_SLICES, [event("ADDED", obj, "10")])
    ResourceSlice.objects.update(spec_digest="")  # a row written before digests existed
    Device.objects.filter(name="gpu-0").update(state="blocked")
    obj["metadata"]["labels"] = {"edited": "yes"}
    applied = apply_events(Kind.RESOURCE_SLICES, [event("MODIFIED", obj, "11")])
    assert applied.same_spec == set()
    assert Device.objects.get(name="gpu-0").state == "free"
    assert ResourceSlice.objects.get().spec_digest


@pytest.mark.django_db
def test_a_claims_rows_follow_a_change_of_consumers_or_results_and_nothing_else():
    from claims.models import AllocatedDevice, ClaimConsumer

    gpus = h100_slice()
    apply_events(Kind.RESOURCE_SLICES, [event("ADDED", gpus, "10")])
    claim = claim_on(gpus, "gpu-5", uid="c")
    apply_events(Kind.RESOURCE_CLAIMS, [event("ADDED", claim, "11")])
    result = AllocatedDevice.objects.get().pk
    # One more consumer: the children are rewritten, the state stays.
    claim["status"]["reservedFor"].append({"resource": "pods", "name": "p9", "uid": "u9"})
    apply_events(Kind.RESOURCE_CLAIMS, [event("MODIFIED", claim, "12")])
    assert sorted(ClaimConsumer.objects.values_list("name", flat=True)) == ["p0", "p9"]
    # Reallocated to another device: the old one is free again, the new one allocated.
    claim["status"]["allocation"]["devices"]["results"][0]["device"] = "gpu-6"
    apply_events(Kind.RESOURCE_CLAIMS, [event("MODIFIED", claim, "13")])
    assert list(AllocatedDevice.objects.values_list("device_name", flat=True)) == ["gpu-6"]
    assert AllocatedDevice.objects.get().pk != result
    assert (state_of("gpu-5"), state_of("gpu-6")) == ("free", "allocated")
    # A row written before digests existed is rewritten once, then compared again.
    ResourceClaim.objects.update(children_digest="")
    claim["metadata"]["labels"] = {"team": "a"}
    apply_events(Kind.RESOURCE_CLAIMS, [event("MODIFIED", claim, "14")])
    rewritten = AllocatedDevice.objects.get().pk
    assert ResourceClaim.objects.get().children_digest
    claim["metadata"]["labels"] = {"team": "b"}
    apply_events(Kind.RESOURCE_CLAIMS, [event("MODIFIED", claim, "15")])
    assert AllocatedDevice.objects.get().pk == rewritten


@pytest.mark.django_db(transaction=True)
def test_a_watcher_transaction_commits_without_waiting_and_no_other_does(postgres):
    from django.db import connection, transaction

    from mirror.store import commit_without_waiting

    def setting() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            return cursor.fetchone()[0]

    with transaction.atomic():
        commit_without_waiting()
        assert setting() == "off"
        apply_events(Kind.RESOURCE_SLICES, [event("ADDED", h100_slice(), "10")])
    assert setting() == "on"  # the next transaction waits for its flush again
    commit_without_waiting()  # outside a transaction: nothing to relax
    assert setting() == "on"
    assert ResourceSlice.objects.count() == 1
