"""``pods/<name>/binding``: how kube-scheduler assigns a pod to a node."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from apiemulator import Emulator
from kube.client import Cluster
from kube.errors import Conflict
from kube.kinds import Kind


def pending_pod(cluster: Cluster, name: str = "trainer") -> dict[str, Any]:
    return cluster.create(
        Kind.PODS,
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        },
    )


def test_binding_a_pod_sets_its_node_and_marks_it_scheduled(cluster: Cluster) -> None:
    created = pending_pod(cluster)
    cluster.bind_pod("trainer", "default", "dgx-h100-01", uid=created["metadata"]["uid"])

    pod = cluster.get(Kind.PODS, "trainer", "default")
    assert pod["spec"]["nodeName"] == "dgx-h100-01"
    (condition,) = pod["status"]["conditions"]
    assert (condition["type"], condition["status"]) == ("PodScheduled", "True")
    assert pod["status"]["phase"] == "Pending"  # running it is the kubelet's job


def test_binding_a_pod_that_already_has_a_node_conflicts(cluster: Cluster) -> None:
    pending_pod(cluster)
    cluster.bind_pod("trainer", "default", "dgx-h100-01")

    with pytest.raises(Conflict, match="already assigned to node 'dgx-h100-01'"):
        cluster.bind_pod("trainer", "default", "dgx-h100-02")
    assert cluster.get(Kind.PODS, "trainer", "default")["spec"]["nodeName"] == "dgx-h100-01"


def test_binding_with_another_pods_uid_conflicts(cluster: Cluster) -> None:
    pending_pod(cluster)
    with pytest.raises(Conflict):
        cluster.bind_pod("trainer", "default", "dgx-h100-01", uid="not-this-pod")
    assert "nodeName" not in cluster.get(Kind.PODS, "trainer", "default")["spec"]


def test_the_binding_subresource_answers_a_success_status_and_is_discoverable(
    emulator: Emulator, cluster: Cluster
) -> None:
    pending_pod(cluster)
    request = urllib.request.Request(
        f"{emulator.url}/api/v1/namespaces/default/pods/trainer/binding",
        data=json.dumps({"target": {"kind": "Node", "name": "n1"}}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request) as response:
        status, body = response.status, json.loads(response.read())
    with urllib.request.urlopen(f"{emulator.url}/api/v1") as response:
        resources = {r["name"]: r for r in json.loads(response.read())["resources"]}

    assert status == 201
    assert (body["kind"], body["status"]) == ("Status", "Success")
    assert resources["pods/binding"]["verbs"] == ["create"]
