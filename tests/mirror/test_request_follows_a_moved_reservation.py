"""kube-scheduler replaces a reservation no pod holds when a pod using the claim cannot go to
the reserved node ("deallocation of ResourceClaim completed", then its own allocation): the
request follows the cluster's allocation, records the conflict and tells its owner."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from claims.models import AllocationRecord, ClaimRequest, ClassPolicy, ResourceClaim
from claims.requests.services import submit_request
from claims.requests.specs import ClaimInput
from demo.scheduler import Scheduler
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.kinds import Kind
from mirror.following import sync_requests
from portal.models import AuditEvent
from tests.mirror.conftest import watch_claims

pytestmark = pytest.mark.django_db(transaction=True)
State = ClaimRequest.State
H100_NODES = ("dgx-h100-01", "dgx-h100-02")


def node_of(allocation: dict) -> str:
    [term] = allocation["nodeSelector"]["nodeSelectorTerms"]
    [field] = term["matchFields"]
    return field["values"][0]


def devices(allocation: dict) -> list[list[str]]:
    return sorted([r["driver"], r["pool"], r["device"]] for r in allocation["devices"]["results"])


def test_a_reservation_the_scheduler_replaced_is_followed_and_recorded(bob, live, client_as):
    emulator, cluster, _ = live
    ClassPolicy.objects.create(device_class_name="gpu.nvidia.com", mode="reservation")
    request = submit_request(
        user=bob,
        claim=ClaimInput(
            namespace="gpu-test1", name="pair", device_class_name="gpu.nvidia.com", count=2
        ),
    )
    request.refresh_from_db()
    assert request.state == State.APPLIED, request.reason
    reserved_node = request.node_name
    elsewhere = next(node for node in H100_NODES if node != reserved_node)
    watch_claims(
        cluster,
        lambda: ResourceClaim.objects.filter(name="pair", is_allocated=True).exists(),
    )

    def scheduler_replaces_it() -> None:
        """A pod that cannot go to the reserved node: the scheduler clears the claim's
        allocation (nobody reserves it), then allocates it where the pod fits."""
        with Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client:
            claim = client.get(Kind.RESOURCE_CLAIMS, "pair", "gpu-test1")
            del claim["status"]["allocation"]
            client.replace_status(Kind.RESOURCE_CLAIMS, claim)
            pod = client.create(
                Kind.PODS,
                {
                    "metadata": {"name": "trainer", "namespace": "gpu-test1"},
                    "spec": {
                        "nodeSelector": {"kubernetes.io/hostname": elsewhere},
                        "containers": [{"name": "ctr", "image": "ubuntu:24.04"}],
                        "resourceClaims": [{"name": "gpu", "resourceClaimName": "pair"}],
                    },
                },
            )
            assert Scheduler(client).schedule(pod).is_scheduled

    def followed() -> bool:
        request.refresh_from_db()
        return request.conflicts == 1 and request.state == State.IN_USE

    watch_claims(cluster, followed, action=scheduler_replaces_it)
    held = cluster.get(Kind.RESOURCE_CLAIMS, "pair", "gpu-test1")["status"]["allocation"]
    assert devices(request.allocation) == devices(held)
    assert request.node_name == node_of(held) == elsewhere
    event = AuditEvent.objects.get(
        action=AuditEvent.Action.CLAIM_CONFLICT, object_id=str(request.pk)
    )
    assert event.before["node"] == reserved_node
    assert event.after["node"] == elsewhere
    assert event.after["devices"] == devices(held)
    assert len(event.before["devices"]) == 2
    assert event.before["devices"] != event.after["devices"]
    [email] = [m for m in mail.outbox if "moved" in m.subject]
    assert email.to == ["bob@example.com"]
    assert email.subject == "Claim gpu-test1/pair was moved to other devices"
    assert elsewhere in email.body and reserved_node in email.body

    page = client_as(bob).get(request.get_absolute_url()).content.decode()
    assert "not mirrored yet" not in page
    assert page.count('data-testid="allocated-device"') == 2
    for *_, device in devices(held):
        assert f">{device}</a>" in page
    assert "the cluster moved the claim from " in page


def test_a_reservation_cleared_and_not_allocated_again_is_followed_by_the_backstop(
    bob, live, client_as
):
    emulator, cluster, _ = live
    ClassPolicy.objects.create(device_class_name="gpu.nvidia.com", mode="reservation")
    request = submit_request(
        user=bob,
        claim=ClaimInput(namespace="gpu-test1", name="solo", device_class_name="gpu.nvidia.com"),
    )
    request.refresh_from_db()
    written = request.allocation
    watch_claims(
        cluster, lambda: ResourceClaim.objects.filter(name="solo", is_allocated=True).exists()
    )

    def cleared_by_someone() -> None:
        with Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client:
            claim = client.get(Kind.RESOURCE_CLAIMS, "solo", "gpu-test1")
            del claim["status"]["allocation"]
            client.replace_status(Kind.RESOURCE_CLAIMS, claim)

    watch_claims(
        cluster,
        lambda: ResourceClaim.objects.filter(name="solo", is_allocated=False).exists(),
        action=cleared_by_someone,
    )
    # At once it waits: kube-scheduler clears a reservation to allocate it again elsewhere.
    request.refresh_from_db()
    assert (request.allocation, request.conflicts) == (written, 0)
    assert sync_requests()["moved"] == 0
    # Still without an allocation after the grace period: the request follows the cluster.
    AllocationRecord.objects.filter(claim_name="solo").update(
        ended_at=timezone.now() - timedelta(minutes=1)
    )
    assert sync_requests()["moved"] == 1
    request.refresh_from_db()
    assert (request.allocation, request.node_name, request.conflicts) == (None, "", 1)
    assert request.state == State.APPLIED
    event = AuditEvent.objects.get(
        action=AuditEvent.Action.CLAIM_CONFLICT, object_id=str(request.pk)
    )
    assert event.before["devices"] == devices(written)
    assert event.after["devices"] == []
    page = client_as(bob).get(request.get_absolute_url()).content.decode()
    assert "not mirrored yet" not in page
    assert ">0 devices<" in page
    assert sync_requests()["moved"] == 0  # recorded once
