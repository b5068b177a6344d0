"""A request is in use while a pod reserves its claim, within seconds of the mirror seeing it
(not on the next beat), and applied again when the pod goes."""

from __future__ import annotations

import pytest

from claims.models import ClaimRequest
from claims.requests.services import submit_request
from claims.requests.specs import ClaimInput
from demo.scheduler import Scheduler
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.kinds import Kind
from portal.models import AuditEvent
from tests.mirror.conftest import watch_claims

pytestmark = pytest.mark.django_db(transaction=True)
State = ClaimRequest.State


def pod_using(claim: str, name: str) -> dict:
    return {
        "metadata": {"name": name, "namespace": "gpu-test1"},
        "spec": {
            "containers": [{"name": "ctr", "image": "ubuntu:24.04"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
        },
    }


def state_of(request: ClaimRequest) -> str:
    request.refresh_from_db()
    return request.state


def test_a_scheduler_mode_request_is_in_use_while_a_pod_reserves_its_claim(bob, live):
    emulator, cluster, _ = live
    request = submit_request(
        user=bob,
        claim=ClaimInput(namespace="gpu-test1", name="one-gpu", device_class_name="gpu.nvidia.com"),
    )
    assert state_of(request) == State.APPLIED
    assert request.mode == "scheduler"

    def schedule() -> None:  # the kube-scheduler: allocates the claim and reserves it
        with Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client:
            pod = client.create(Kind.PODS, pod_using("one-gpu", "trainer"))
            assert Scheduler(client).schedule(pod).is_scheduled

    watch_claims(cluster, lambda: state_of(request) == State.IN_USE, action=schedule)

    def pod_leaves() -> None:
        with Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client:
            pod = client.get(Kind.PODS, "trainer", "gpu-test1")
            client.delete(Kind.PODS, "trainer", "gpu-test1")
            Scheduler(client).release(pod)

    watch_claims(cluster, lambda: state_of(request) == State.APPLIED, action=pod_leaves)
    moves = [
        (event.before["state"], event.after["state"])
        for event in AuditEvent.objects.filter(
            action=AuditEvent.Action.CLAIM_STATE, object_id=str(request.pk)
        ).order_by("pk")
    ]
    assert moves[-2:] == [(State.APPLIED, State.IN_USE), (State.IN_USE, State.APPLIED)]
