"""A request whose claim is gone from the cluster ends — deleted with kubectl, or the cluster
replaced (a demo restart: the emulator starts again without the portal's claims) — with the
reason, an audit event, its quota freed and its owner told; never merely because the mirror
has not caught up with the claim."""

from __future__ import annotations

import pytest
from django.core import mail

from claims.lifecycle.transitions import CLAIM_DELETED_REASON, CLUSTER_REPLACED_REASON
from claims.models import ClaimRequest, ClassPolicy, ResourceClaim
from claims.requests.services import submit_request
from claims.requests.specs import ClaimInput
from harness.fixtures import fixture_objects
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.kinds import Kind
from mirror.following import follow_requests, sync_requests
from mirror.reflector import Reflector
from portal.models import AuditEvent
from tests.mirror.conftest import watch_claims

pytestmark = pytest.mark.django_db(transaction=True)
State = ClaimRequest.State


def ask(user, name: str, count: int = 1) -> ClaimRequest:
    request = submit_request(
        user=user,
        claim=ClaimInput(
            namespace="gpu-test1", name=name, device_class_name="gpu.nvidia.com", count=count
        ),
    )
    request.refresh_from_db()
    assert request.state == State.APPLIED, request.reason
    return request


def ended(*requests: ClaimRequest) -> bool:
    for request in requests:
        request.refresh_from_db()
    return all(request.state == State.RELEASED for request in requests)


def mirrored(*names: str) -> bool:
    return ResourceClaim.objects.filter(namespace="gpu-test1", name__in=names).count() == len(names)


def in_flight(api_as, user) -> int:
    usage = api_as(user).get("/api/v1/tenants/team-a/usage/").json()
    [gpus] = [entry for entry in usage["classes"] if entry["device_class"] == "gpu.nvidia.com"]
    return gpus["in_flight"]["devices"]


def test_a_claim_deleted_with_kubectl_ends_its_request(bob, live, api_as):
    emulator, cluster, _ = live
    request = ask(bob, "deleted-later", count=2)
    watch_claims(cluster, lambda: mirrored("deleted-later"))

    def kubectl_delete() -> None:
        with Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client:
            client.delete(Kind.RESOURCE_CLAIMS, "deleted-later", "gpu-test1")

    watch_claims(cluster, lambda: ended(request), action=kubectl_delete)
    assert request.reason == CLAIM_DELETED_REASON
    event = AuditEvent.objects.filter(
        action=AuditEvent.Action.CLAIM_STATE, object_id=str(request.pk)
    ).latest("pk")
    assert (event.before, event.after) == (
        {"state": State.APPLIED},
        {"state": State.RELEASED, "reason": CLAIM_DELETED_REASON},
    )
    assert in_flight(api_as, bob) == 0
    [email] = [m for m in mail.outbox if "gone" in m.subject]
    assert email.to == ["bob@example.com"]
    assert email.subject == "Claim gpu-test1/deleted-later is gone from the cluster"
    assert CLAIM_DELETED_REASON in email.body


def test_requests_end_when_the_cluster_is_replaced(bob, live, api_as):
    emulator, cluster, _ = live
    fixtures_only = tenant_devices(api_as, bob)
    ClassPolicy.objects.create(device_class_name="gpu.nvidia.com", mode="reservation")
    reserved = ask(bob, "reserved-pair", count=2)
    ClassPolicy.objects.all().delete()
    scheduled = ask(bob, "scheduled-one")
    watch_claims(cluster, lambda: mirrored("reserved-pair", "scheduled-one"))
    assert in_flight(api_as, bob) == 0  # both held through the mirror
    assert tenant_devices(api_as, bob) == fixtures_only + 3

    # The demo restarts: a new emulator (new identity, history from the start), fixtures only.
    emulator.replace_cluster(resource_version=1)
    emulator.load(fixture_objects())
    # Until the claims watcher has listed the new cluster, the mirror cannot tell.
    assert sync_requests() == {"in_use": 0, "applied": 0, "gone": 0, "moved": 0}
    assert not ended(reserved) and not ended(scheduled)

    watch_claims(cluster, lambda: ended(reserved, scheduled))
    assert reserved.reason == scheduled.reason == CLUSTER_REPLACED_REASON
    assert in_flight(api_as, bob) == 0
    assert tenant_devices(api_as, bob) == fixtures_only
    gone = [m for m in mail.outbox if "gone" in m.subject]
    assert sorted(m.subject for m in gone) == [
        "Claim gpu-test1/reserved-pair is gone from the cluster",
        "Claim gpu-test1/scheduled-one is gone from the cluster",
    ]


def tenant_devices(api_as, user) -> int:
    usage = api_as(user).get("/api/v1/tenants/team-a/usage/").json()
    return sum(entry["used"]["devices"] for entry in usage["classes"])


def test_a_claim_the_mirror_has_not_seen_yet_keeps_its_request(bob, live):
    emulator, cluster, _ = live
    Reflector(Kind.RESOURCE_CLAIMS, cluster).relist()  # listed before the claim was made
    first = ask(bob, "just-made")
    assert follow_requests(backstop=True)["gone"] == 0  # not watched since: cannot tell
    assert not ended(first)

    # The cluster is replaced and a request applied to the new one before the claims watcher
    # has listed it: the mirror still holds the old cluster, which says nothing about it.
    emulator.replace_cluster()
    emulator.load(fixture_objects())
    second = ask(bob, "made-in-the-new-cluster")
    assert follow_requests(backstop=True)["gone"] == 0
    assert not ended(second)
    watch_claims(cluster, lambda: mirrored("made-in-the-new-cluster"))
    assert follow_requests(backstop=True)["gone"] == 0
    assert not ended(second)
    assert ended(first)  # made in the old cluster: gone with it
    assert first.reason == CLUSTER_REPLACED_REASON
