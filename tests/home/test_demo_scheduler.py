"""The demo's simulated scheduler, against the API emulator over HTTP (real kubernetes client).

Each test drives one step of the scheduler (``schedule``, ``handle``, ``sync``) on the demo
cluster; the last ones run its loop in a thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from apiemulator import Emulator, Fault
from claims.models import RESERVATION_FINALIZER, SIMULATED_SCHEDULER_ANNOTATION
from demo.scheduler import DELETE_PROTECTION, POD_CLAIM_NAME, Scheduler
from kube.client import Cluster
from kube.errors import NotFound
from kube.kinds import Kind

NAMESPACE = "default"
# gpu.example.com devices the demo's claims leave free (8 on the example driver's node, 3 held).
FREE_EXAMPLE_GPUS = 5


def make_claim(
    cluster: Cluster, name: str, device_class: str = "gpu.example.com", count: int = 1
) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": device_class, "count": count}}
    return cluster.create(
        Kind.RESOURCE_CLAIMS,
        {
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"devices": {"requests": [request]}},
        },
    )


def make_pod(cluster: Cluster, name: str, *claims: dict[str, str]) -> dict[str, Any]:
    return cluster.create(
        Kind.PODS,
        {
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "containers": [{"name": "ctr", "image": "ubuntu:24.04"}],
                "resourceClaims": list(claims),
            },
        },
    )


def uses(claim_name: str, entry: str = "gpu") -> dict[str, str]:
    return {"name": entry, "resourceClaimName": claim_name}


def get_claim(cluster: Cluster, name: str, namespace: str = NAMESPACE) -> dict[str, Any]:
    return cluster.get(Kind.RESOURCE_CLAIMS, name, namespace)


def get_pod(cluster: Cluster, name: str, namespace: str = NAMESPACE) -> dict[str, Any]:
    return cluster.get(Kind.PODS, name, namespace)


def delete_pod(cluster: Cluster, name: str, namespace: str = NAMESPACE) -> dict[str, Any]:
    """Deletes the pod; returns it as the watch's DELETED event shows it."""
    pod = get_pod(cluster, name, namespace)
    cluster.delete(Kind.PODS, name, namespace)
    return {"type": "DELETED", "object": pod}


def reserved_names(claim: dict[str, Any]) -> list[str]:
    return [entry["name"] for entry in (claim.get("status") or {}).get("reservedFor") or []]


def scheduled_condition(pod: dict[str, Any]) -> dict[str, Any]:
    (condition,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    return condition


def eventually(check: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "the scheduler did not get there in time"
        time.sleep(0.05)


# -- placing pods ------------------------------------------------------------------------------


def test_a_pod_using_an_unallocated_claim_gets_it_allocated_reserved_and_is_bound(
    cluster: Cluster, scheduler: Scheduler
) -> None:
    make_claim(cluster, "one-gpu")
    pod = make_pod(cluster, "trainer", uses("one-gpu"))

    attempt = scheduler.schedule(pod)

    claim, pod = get_claim(cluster, "one-gpu"), get_pod(cluster, "trainer")
    assert attempt.node == "dra-example-driver-cluster-worker"  # the only gpu.example.com node
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert (result["request"], result["driver"]) == ("gpu", "gpu.example.com")
    assert claim["status"]["allocation"]["allocationTimestamp"]
    assert claim["status"]["reservedFor"] == [
        {"resource": "pods", "name": "trainer", "uid": pod["metadata"]["uid"]}
    ]
    assert DELETE_PROTECTION in claim["metadata"]["finalizers"]
    assert claim["metadata"]["annotations"][SIMULATED_SCHEDULER_ANNOTATION] == "true"
    assert pod["spec"]["nodeName"] == attempt.node
    assert pod["status"]["phase"] == "Running"
    assert scheduled_condition(pod)["status"] == "True"
    # As a kubelet reports a started pod: kubectl get pods reads READY 1/1, not 0/1.
    [container] = pod["status"]["containerStatuses"]
    assert (container["name"], container["ready"], container["started"]) == ("ctr", True, True)
    ready = [c for c in pod["status"]["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "True"


def test_the_allocator_avoids_devices_that_other_claims_hold(
    cluster: Cluster, scheduler: Scheduler
) -> None:
    held = {
        (result["pool"], result["device"])
        for claim in cluster.list_all(Kind.RESOURCE_CLAIMS)[0]
        for result in (
            ((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}
        ).get("results", [])
        if result["driver"] == "gpu.example.com" and not result.get("adminAccess")
    }
    make_claim(cluster, "one-gpu")
    scheduler.schedule(make_pod(cluster, "trainer", uses("one-gpu")))

    (result,) = get_claim(cluster, "one-gpu")["status"]["allocation"]["devices"]["results"]
    assert held and (result["pool"], result["device"]) not in held


def test_a_pod_with_a_claim_template_gets_a_claim_of_its_own(
    cluster: Cluster, scheduler: Scheduler
) -> None:
    pod = cluster.create(
        Kind.PODS,
        {
            "metadata": {"name": "pod9", "namespace": "gpu-test1"},
            "spec": {
                "containers": [{"name": "ctr", "image": "ubuntu:24.04"}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
            },
        },
    )

    attempt = scheduler.schedule(pod)

    pod = get_pod(cluster, "pod9", "gpu-test1")
    (status,) = pod["status"]["resourceClaimStatuses"]
    claim = get_claim(cluster, status["resourceClaimName"], "gpu-test1")
    assert status["name"] == "gpu"
    assert claim["metadata"]["name"].startswith("pod9-gpu-")
    assert claim["metadata"]["annotations"][POD_CLAIM_NAME] == "gpu"
    (owner,) = claim["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Pod", "pod9", pod["metadata"]["uid"])
    assert owner["controller"] is True
    assert claim["status"]["allocation"]["devices"]["results"][0]["driver"] == "gpu.nvidia.com"
    assert reserved_names(claim) == ["pod9"]
    assert pod["spec"]["nodeName"] == attempt.node


def test_a_pod_using_an_allocated_claim_goes_to_the_claims_node(
    cluster: Cluster, scheduler: Scheduler
) -> None:
    # gpu-test3/single-gpu holds a GPU of dgx-h100-01 for pod1 and pod2.
    pod = cluster.create(
        Kind.PODS,
        {
            "metadata": {"name": "pod3", "namespace": "gpu-test3"},
            "spec": {
                "containers": [{"name": "ctr", "image": "ubuntu:24.04"}],
                "resourceClaims": [uses("single-gpu")],
            },
        },
    )
    allocation_before = get_claim(cluster, "single-gpu", "gpu-test3")["status"]["allocation"]

    attempt = scheduler.schedule(pod)

    claim = get_claim(cluster, "single-gpu", "gpu-test3")
    assert attempt.node == "dgx-h100-01"
    assert claim["status"]["allocation"] == allocation_before
    assert reserved_names(claim) == ["pod1", "pod2", "pod3"]
    assert SIMULATED_SCHEDULER_ANNOTATION not in (claim["metadata"].get("annotations") or {})


def test_two_pods_sharing_a_claim_run_on_its_node_and_both_reserve_it(
    cluster: Cluster, scheduler: Scheduler
) -> None:
    make_claim(cluster, "shared")
    first = scheduler.schedule(make_pod(cluster, "first", uses("shared")))
    second = scheduler.schedule(make_pod(cluster, "second", uses("shared")))

    claim = get_claim(cluster, "shared")
    assert first.node and first.node == second.node
    assert reserved_names(claim) == ["first", "second"]
    assert len(claim["status"]["allocation"]["devices"]["results"]) == 1


def test_a_pod_that_cannot_be_placed_stays_pending_and_says_why(
    cluster: Cluster, scheduler: Scheduler
) -> None:
    make_claim(cluster, "too-many", count=9)  # the example driver's node has 8 GPUs
    pod = make_pod(cluster, "greedy", uses("too-many"))

    attempt = scheduler.schedule(pod)

    pod, claim = get_pod(cluster, "greedy"), get_claim(cluster, "too-many")
    condition = scheduled_condition(pod)
    assert not attempt.node
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    assert condition["message"] == "0/5 nodes are available: 5 cannot allocate all claims."
    assert "nodeName" not in pod["spec"]
    assert pod["status"]["phase"] == "Pending"
    assert "status" not in claim or not claim["status"].get("allocation")
    assert "finalizers" not in claim["metadata"]


def test_a_pod_whose_claim_does_not_exist_is_unschedulable(
    cluster: Cluster, scheduler: Scheduler
) -> None:
    scheduler.schedule(make_pod(cluster, "orphan", uses("missing")))

    condition = scheduled_condition(get_pod(cluster, "orphan"))
    assert condition["reason"] == "Unschedulable"
    assert condition["message"] == 'resourceclaim "missing" not found'


def test_an_allocator_error_leaves_the_pod_pending_with_a_scheduler_error(
    cluster: Cluster, scheduler: Scheduler
) -> None:
    # The demo's pending pod: its claim's CEL selector reads an attribute some devices lack.
    pod = get_pod(cluster, "pod-5f7d8c9b4-kq2wz", "gpu-test6")

    attempt = scheduler.schedule(pod)

    condition = scheduled_condition(get_pod(cluster, "pod-5f7d8c9b4-kq2wz", "gpu-test6"))
    assert not attempt.node
    assert (condition["status"], condition["reason"]) == ("False", "SchedulerError")
    assert "CEL runtime error" in condition["message"]


def test_retrying_an_unschedulable_pod_writes_nothing_when_nothing_changed(
    cluster: Cluster, scheduler: Scheduler
) -> None:
    make_claim(cluster, "too-many", count=9)
    pod = make_pod(cluster, "greedy", uses("too-many"))
    scheduler.schedule(pod)
    version = get_pod(cluster, "greedy")["metadata"]["resourceVersion"]

    scheduler.schedule(pod)

    assert get_pod(cluster, "greedy")["metadata"]["resourceVersion"] == version


def test_a_pending_pod_is_placed_once_devices_free_up(
    cluster: Cluster, scheduler: Scheduler
) -> None:
    make_claim(cluster, "all-gpus", count=FREE_EXAMPLE_GPUS)
    first = scheduler.schedule(make_pod(cluster, "first", uses("all-gpus")))
    make_claim(cluster, "one-more")
    waiting = scheduler.schedule(make_pod(cluster, "second", uses("one-more")))
    assert first.node and not waiting.node

    scheduler.handle(delete_pod(cluster, "first"))
    scheduler.sync()

    assert get_pod(cluster, "second")["spec"]["nodeName"] == first.node


# -- releasing claims --------------------------------------------------------------------------


def test_deleting_a_pod_releases_the_claim_it_had_allocated(
    cluster: Cluster, scheduler: Scheduler
) -> None:
    make_claim(cluster, "one-gpu")
    scheduler.schedule(make_pod(cluster, "trainer", uses("one-gpu")))

    scheduler.handle(delete_pod(cluster, "trainer"))

    claim = get_claim(cluster, "one-gpu")
    assert not (claim.get("status") or {}).get("allocation")
    assert not reserved_names(claim)
    assert DELETE_PROTECTION not in (claim["metadata"].get("finalizers") or [])
    assert SIMULATED_SCHEDULER_ANNOTATION not in (claim["metadata"].get("annotations") or {})


def test_a_shared_claim_stays_allocated_until_its_last_pod_goes(
    cluster: Cluster, scheduler: Scheduler
) -> None:
    make_claim(cluster, "shared")
    scheduler.schedule(make_pod(cluster, "first", uses("shared")))
    scheduler.schedule(make_pod(cluster, "second", uses("shared")))

    scheduler.handle(delete_pod(cluster, "first"))
    still_used = get_claim(cluster, "shared")
    scheduler.handle(delete_pod(cluster, "second"))

    assert still_used["status"]["allocation"] and reserved_names(still_used) == ["second"]
    assert not get_claim(cluster, "shared").get("status", {}).get("allocation")


def test_a_claim_allocated_without_the_finalizer_keeps_its_allocation_when_its_last_pod_goes(
    cluster: Cluster, scheduler: Scheduler
) -> None:
    make_claim(cluster, "held")
    scheduler.schedule(make_pod(cluster, "trainer", uses("held")))
    # Made a portal reservation: its own finalizer, not delete-protection.
    cluster.patch(
        Kind.RESOURCE_CLAIMS,
        "held",
        {"metadata": {"finalizers": [RESERVATION_FINALIZER], "annotations": None}},
        namespace=NAMESPACE,
    )
    allocation = get_claim(cluster, "held")["status"]["allocation"]

    scheduler.handle(delete_pod(cluster, "trainer"))

    claim = get_claim(cluster, "held")
    assert claim["status"]["allocation"] == allocation
    assert not reserved_names(claim)
    assert claim["metadata"]["finalizers"] == [RESERVATION_FINALIZER]


def test_deleting_a_pod_deletes_the_claim_generated_for_it(
    cluster: Cluster, scheduler: Scheduler
) -> None:
    scheduler.schedule(
        cluster.create(
            Kind.PODS,
            {
                "metadata": {"name": "pod9", "namespace": "gpu-test1"},
                "spec": {
                    "containers": [{"name": "ctr", "image": "ubuntu:24.04"}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
                },
            },
        )
    )
    (status,) = get_pod(cluster, "pod9", "gpu-test1")["status"]["resourceClaimStatuses"]

    scheduler.handle(delete_pod(cluster, "pod9", "gpu-test1"))

    with pytest.raises(NotFound):
        get_claim(cluster, status["resourceClaimName"], "gpu-test1")


def test_a_pass_releases_claims_of_pods_deleted_while_nobody_watched(
    cluster: Cluster, scheduler: Scheduler
) -> None:
    make_claim(cluster, "one-gpu")
    scheduler.schedule(make_pod(cluster, "trainer", uses("one-gpu")))
    cluster.delete(Kind.PODS, "trainer", NAMESPACE)

    scheduler.sync()

    claim = get_claim(cluster, "one-gpu")
    assert not (claim.get("status") or {}).get("allocation")
    assert "finalizers" not in claim["metadata"]


def test_a_pass_leaves_the_demo_clusters_running_pods_and_their_claims_alone(
    cluster: Cluster, scheduler: Scheduler
) -> None:
    before = {c["metadata"]["uid"]: c for c in cluster.list_all(Kind.RESOURCE_CLAIMS)[0]}

    scheduler.sync()

    after = {c["metadata"]["uid"]: c for c in cluster.list_all(Kind.RESOURCE_CLAIMS)[0]}
    assert after == before


# -- robustness --------------------------------------------------------------------------------


def test_a_conflicting_write_is_retried_on_a_fresh_read(
    emulator: Emulator, cluster: Cluster, scheduler: Scheduler
) -> None:
    make_claim(cluster, "one-gpu")
    pod = make_pod(cluster, "trainer", uses("one-gpu"))
    emulator.add_fault(
        Fault("error", status=409, method="PUT", path=r"/resourceclaims/one-gpu/status$")
    )

    attempt = scheduler.schedule(pod)

    assert attempt.node
    assert reserved_names(get_claim(cluster, "one-gpu")) == ["trainer"]
    assert not emulator.faults()  # the conflict was met, then the write retried


def test_one_failing_pod_does_not_stop_a_pass(
    emulator: Emulator, cluster: Cluster, scheduler: Scheduler
) -> None:
    make_claim(cluster, "broken")
    make_claim(cluster, "fine")
    make_pod(cluster, "a-broken", uses("broken"))
    make_pod(cluster, "b-fine", uses("fine"))
    emulator.add_fault(Fault("error", count=None, method="GET", path=r"/resourceclaims/broken$"))

    scheduler.sync()

    assert "nodeName" not in get_pod(cluster, "a-broken")["spec"]
    assert get_pod(cluster, "b-fine")["spec"]["nodeName"]


@pytest.fixture
def running(scheduler: Scheduler) -> Iterator[threading.Event]:
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.run, args=(stop,), daemon=True)
    thread.start()
    yield stop
    stop.set()
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_the_running_scheduler_places_pods_releases_claims_and_outlives_a_dropped_watch(
    emulator: Emulator, cluster: Cluster, running: threading.Event
) -> None:
    make_claim(cluster, "one-gpu")
    make_pod(cluster, "first", uses("one-gpu"))
    eventually(lambda: bool(get_pod(cluster, "first")["spec"].get("nodeName")))

    emulator.close_watches()
    make_claim(cluster, "another")
    make_pod(cluster, "second", uses("another"))
    eventually(lambda: bool(get_pod(cluster, "second")["spec"].get("nodeName")))

    cluster.delete(Kind.PODS, "first", NAMESPACE)
    eventually(lambda: not get_claim(cluster, "one-gpu").get("status", {}).get("allocation"))
