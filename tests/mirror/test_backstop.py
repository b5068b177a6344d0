"""The ResourceQuota backstop against the API emulator: created, updated, drift found and
repaired, foreign objects left alone, removed when no longer wanted."""

from __future__ import annotations

from typing import Any

import pytest

from apiemulator import Fault
from kube.errors import Forbidden, NotFound
from kube.kinds import Kind
from mirror import backstop
from mirror.backstop import MANAGED_BY, QUOTA_NAME, TENANT_LABEL
from mirror.models import BackstopStatus, MirrorStatus
from mirror.reflector import Reflector
from portal.models import AuditEvent
from portal.services.tenants import delete_quota, save_quota, save_tenant

GPUS = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
MIGS = "mig.nvidia.com.deviceclass.resource.k8s.io/devices"
COUNT = "count/resourceclaims.resource.k8s.io"
State = BackstopStatus.State
TEAM_A = ("team-a-dev", "gpu-test1")


@pytest.fixture
def cluster(live):
    _, client, _ = live
    client.create(Kind.NAMESPACES, {"metadata": {"name": "team-a-dev"}})
    return client


@pytest.fixture
def enabled(team_a, root, cluster, django_capture_on_commit_callbacks):
    """team-a with the backstop switched on by a portal admin (the sync follows on commit)."""
    with django_capture_on_commit_callbacks(execute=True):
        save_tenant(actor=root, tenant=team_a, resource_quota_backstop=True)
    team_a.refresh_from_db()
    return team_a


def quota_in(cluster, namespace: str) -> dict[str, Any]:
    return cluster.get(Kind.RESOURCE_QUOTAS, QUOTA_NAME, namespace)


def states(tenant) -> dict[str, str]:
    return dict(BackstopStatus.objects.filter(tenant=tenant).values_list("namespace", "state"))


def test_switching_it_on_creates_a_labelled_quota_in_every_namespace(enabled, cluster):
    for namespace in ("team-a-dev", "gpu-test1"):
        made = quota_in(cluster, namespace)
        assert made["metadata"]["labels"] == {MANAGED_BY: "dra-portal", TENANT_LABEL: "team-a"}
        assert made["spec"]["hard"] == {GPUS: "8"}
    assert states(enabled) == {"gpu-test1": State.IN_SYNC, "team-a-dev": State.IN_SYNC}


def test_claims_are_counted_only_when_every_class_limits_them(
    enabled, cluster, root, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        save_quota(
            actor=root,
            tenant=enabled,
            device_class_name="gpu.nvidia.com",
            max_devices=8,
            max_claims=3,
        )
        save_quota(actor=root, tenant=enabled, device_class_name="mig.nvidia.com", max_claims=2)
    assert quota_in(cluster, "gpu-test1")["spec"]["hard"] == {GPUS: "8", COUNT: "5"}
    with django_capture_on_commit_callbacks(execute=True):
        save_quota(actor=root, tenant=enabled, device_class_name="mig.nvidia.com", max_devices=4)
    assert quota_in(cluster, "gpu-test1")["spec"]["hard"] == {GPUS: "8", MIGS: "4"}


def test_a_quota_change_updates_the_resource_quota(
    enabled, cluster, root, django_capture_on_commit_callbacks
):
    quota = enabled.quotas.get()
    with django_capture_on_commit_callbacks(execute=True):
        save_quota(actor=root, tenant=enabled, device_class_name="gpu.nvidia.com", max_devices=2)
    assert quota_in(cluster, "team-a-dev")["spec"]["hard"] == {GPUS: "2"}
    with django_capture_on_commit_callbacks(execute=True):
        delete_quota(actor=root, quota=enabled.quotas.get(pk=quota.pk))
    assert quota_in(cluster, "team-a-dev")["spec"]["hard"] == {}


def test_the_api_server_then_refuses_claims_beyond_the_quota(enabled, cluster):
    claim = {
        "metadata": {"name": "outside-the-portal", "namespace": "team-a-dev"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 9}}
                ]
            }
        },
    }
    with pytest.raises(Forbidden, match=f"exceeded quota: {QUOTA_NAME}, requested: {GPUS}=9"):
        cluster.create(Kind.RESOURCE_CLAIMS, claim)


def test_a_hand_edit_is_found_as_drift_with_the_keys_that_differ(enabled, cluster):
    edited = quota_in(cluster, "gpu-test1")
    edited["spec"]["hard"] = {GPUS: "80", "pods": "10"}
    cluster.replace(Kind.RESOURCE_QUOTAS, edited)
    gone = quota_in(cluster, "team-a-dev")
    gone["spec"]["hard"] = {}
    cluster.replace(Kind.RESOURCE_QUOTAS, gone)

    results = {r.namespace: r for r in backstop.check_backstop(enabled)}

    assert results["gpu-test1"].state == State.DRIFTED
    assert results["gpu-test1"].differences == [
        {"resource": GPUS, "change": "changed", "desired": "8", "live": "80"},
        {"resource": "pods", "change": "extra", "desired": None, "live": "10"},
    ]
    assert results["team-a-dev"].differences == [
        {"resource": GPUS, "change": "missing", "desired": "8", "live": None}
    ]
    row = BackstopStatus.objects.get(tenant=enabled, namespace="gpu-test1")
    assert row.state == State.DRIFTED and row.live == {GPUS: "80", "pods": "10"}
    # Drift is shown, not repaired by the check.
    assert quota_in(cluster, "gpu-test1")["spec"]["hard"] == {GPUS: "80", "pods": "10"}


def test_the_same_value_written_differently_is_not_drift(enabled, cluster):
    edited = quota_in(cluster, "gpu-test1")
    edited["spec"]["hard"] = {GPUS: "8000m"}
    cluster.replace(Kind.RESOURCE_QUOTAS, edited)
    assert states(enabled) == {"gpu-test1": State.IN_SYNC, "team-a-dev": State.IN_SYNC}
    backstop.check_backstop(enabled)
    assert states(enabled)["gpu-test1"] == State.IN_SYNC


def test_a_deleted_quota_is_reported_missing(enabled, cluster):
    cluster.delete(Kind.RESOURCE_QUOTAS, QUOTA_NAME, "gpu-test1")
    backstop.check_backstop(enabled)
    assert states(enabled)["gpu-test1"] == State.MISSING


def test_repair_restores_the_desired_quota_and_is_audited(enabled, cluster, alice):
    edited = quota_in(cluster, "gpu-test1")
    edited["spec"]["hard"] = {GPUS: "80"}
    cluster.replace(Kind.RESOURCE_QUOTAS, edited)
    cluster.delete(Kind.RESOURCE_QUOTAS, QUOTA_NAME, "team-a-dev")
    backstop.check_backstop(enabled)

    backstop.repair_backstop(actor=alice, tenant=enabled)

    assert quota_in(cluster, "gpu-test1")["spec"]["hard"] == {GPUS: "8"}
    assert quota_in(cluster, "team-a-dev")["spec"]["hard"] == {GPUS: "8"}
    assert states(enabled) == {"gpu-test1": State.IN_SYNC, "team-a-dev": State.IN_SYNC}
    event = AuditEvent.objects.get(action=AuditEvent.Action.BACKSTOP_REPAIRED)
    assert event.actor == alice and event.tenant == enabled
    assert event.before == {"hard": {"gpu-test1": {GPUS: "80"}, "team-a-dev": None}}
    assert event.after == {"hard": {"gpu-test1": {GPUS: "8"}, "team-a-dev": {GPUS: "8"}}}


def test_repairing_what_is_in_sync_changes_and_records_nothing(enabled, cluster, alice):
    backstop.repair_backstop(actor=alice, tenant=enabled)
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.BACKSTOP_REPAIRED).exists()


def test_a_foreign_quota_of_the_same_name_is_reported_and_never_overwritten(
    team_a, root, cluster, django_capture_on_commit_callbacks
):
    foreign = {"metadata": {"name": QUOTA_NAME}, "spec": {"hard": {"pods": "3"}}}
    cluster.create(Kind.RESOURCE_QUOTAS, foreign, "gpu-test1")
    with django_capture_on_commit_callbacks(execute=True):
        save_tenant(actor=root, tenant=team_a, resource_quota_backstop=True)

    assert quota_in(cluster, "gpu-test1")["spec"]["hard"] == {"pods": "3"}
    row = BackstopStatus.objects.get(tenant=team_a, namespace="gpu-test1")
    assert row.state == State.FOREIGN
    assert "not made by the portal" in row.error
    team_a.refresh_from_db()
    backstop.repair_backstop(actor=root, tenant=team_a)
    assert quota_in(cluster, "gpu-test1")["spec"]["hard"] == {"pods": "3"}
    assert backstop.check_backstop(team_a)[0].state == State.FOREIGN


def test_quotas_of_other_names_are_left_alone(
    enabled, cluster, root, django_capture_on_commit_callbacks
):
    other = {"metadata": {"name": "cluster-admins-limits"}, "spec": {"hard": {GPUS: "1"}}}
    cluster.create(Kind.RESOURCE_QUOTAS, other, "gpu-test1")
    with django_capture_on_commit_callbacks(execute=True):
        save_tenant(actor=root, tenant=enabled, resource_quota_backstop=False)
    backstop.prune_orphans()
    assert cluster.get(Kind.RESOURCE_QUOTAS, "cluster-admins-limits", "gpu-test1")["spec"][
        "hard"
    ] == {GPUS: "1"}


def test_switching_it_off_deletes_the_portals_quotas(
    enabled, cluster, root, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        save_tenant(actor=root, tenant=enabled, resource_quota_backstop=False)
    for namespace in ("team-a-dev", "gpu-test1"):
        with pytest.raises(NotFound):
            quota_in(cluster, namespace)
    assert not BackstopStatus.objects.exists()


def test_a_namespace_given_up_loses_its_quota(
    enabled, cluster, root, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        save_tenant(actor=root, tenant=enabled, namespaces=["team-a-dev"])
    with pytest.raises(NotFound):
        quota_in(cluster, "gpu-test1")
    assert quota_in(cluster, "team-a-dev")["spec"]["hard"] == {GPUS: "8"}
    assert states(enabled) == {"team-a-dev": State.IN_SYNC}


def test_tenants_without_the_backstop_never_reach_the_cluster(
    team_a, root, settings, django_capture_on_commit_callbacks
):
    settings.KUBE_API_SERVER = "http://127.0.0.1:9"  # nothing listens: a call would fail
    with django_capture_on_commit_callbacks(execute=True):
        save_quota(actor=root, tenant=team_a, device_class_name="gpu.nvidia.com", max_devices=1)
    assert not backstop.needs_sync(team_a.pk)
    assert not BackstopStatus.objects.exists()


def test_an_unreachable_api_server_is_recorded_and_the_sync_retried_later(
    live, enabled, root, django_capture_on_commit_callbacks
):
    emulator, cluster, _ = live
    emulator.add_fault(Fault(action="drop", path="resourcequotas", count=None))
    with django_capture_on_commit_callbacks(execute=True):
        save_quota(actor=root, tenant=enabled, device_class_name="gpu.nvidia.com", max_devices=3)
    row = BackstopStatus.objects.get(tenant=enabled, namespace="gpu-test1")
    assert row.state == State.ERROR and "unreachable" in row.error
    emulator.clear_faults()
    assert backstop.sync_backstop(enabled.pk).startswith("applied 2")
    assert quota_in(cluster, "gpu-test1")["spec"]["hard"] == {GPUS: "3"}


def test_the_beat_check_records_drift_and_prunes_orphans(enabled, cluster, team_b):
    orphan = backstop.manifest(team_b, "gpu-test3", {GPUS: "1"})
    cluster.create(Kind.RESOURCE_QUOTAS, orphan)  # team-b has no backstop: nobody wants it
    edited = quota_in(cluster, "gpu-test1")
    edited["spec"]["hard"] = {GPUS: "80"}
    cluster.replace(Kind.RESOURCE_QUOTAS, edited)

    counts = backstop.check_backstops()

    assert counts == {State.DRIFTED: 1, State.IN_SYNC: 1}
    with pytest.raises(NotFound):
        quota_in(cluster, "gpu-test3")
    assert quota_in(cluster, "gpu-test1")["spec"]["hard"] == {GPUS: "80"}


def test_a_replaced_cluster_is_checked_at_once(
    live, enabled, cluster, django_capture_on_commit_callbacks
):
    emulator, _, _ = live
    namespaces = Reflector(Kind.NAMESPACES, cluster, watch_seconds=1)
    namespaces.relist()
    assert set(states(enabled).values()) == {State.IN_SYNC}
    replacement = emulator.replace_cluster()  # a new control plane: no ResourceQuota in it
    emulator.load(
        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in TEAM_A]
    )

    def until_mirrored() -> bool:
        return MirrorStatus.objects.get(kind="namespaces").cluster_uid != replacement

    with django_capture_on_commit_callbacks(execute=True):
        namespaces.run(seconds=10, keepalive=until_mirrored)  # the watcher finds it replaced
    assert states(enabled) == {"gpu-test1": State.MISSING, "team-a-dev": State.MISSING}
