"""A ResourceSlice's driver and node cannot change on update, as on a real API server; the
rest of its spec can."""

from __future__ import annotations

import pytest

from apiemulator import Emulator
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.errors import Invalid
from kube.kinds import Kind

SLICE = {
    "metadata": {"name": "node-a-gpu"},
    "spec": {
        "driver": "gpu.example.com",
        "nodeName": "node-a",
        "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0"}],
    },
}


@pytest.fixture
def cluster():
    with Emulator(port=0) as emulator, Cluster(ClusterConfig(server=emulator.url)) as client:
        yield client


def test_it_refuses_a_new_node_name_naming_the_field_and_value(cluster):
    cluster.create(Kind.RESOURCE_SLICES, SLICE)
    with pytest.raises(Invalid, match='spec.nodeName: Invalid value: "node-b": field is immutable'):
        cluster.patch(Kind.RESOURCE_SLICES, "node-a-gpu", {"spec": {"nodeName": "node-b"}})
    assert cluster.get(Kind.RESOURCE_SLICES, "node-a-gpu")["spec"]["nodeName"] == "node-a"


def test_it_lists_every_immutable_field_an_update_changes(cluster):
    stored = cluster.create(Kind.RESOURCE_SLICES, SLICE)
    changed = {**stored, "spec": {**stored["spec"], "driver": "other.example.com", "nodeName": "b"}}
    with pytest.raises(Invalid) as refused:
        cluster.replace(Kind.RESOURCE_SLICES, changed)
    assert "[spec.nodeName: " in str(refused.value)
    assert 'spec.driver: Invalid value: "other.example.com": field is immutable]' in str(
        refused.value
    )


def test_the_rest_of_the_spec_may_change(cluster):
    cluster.create(Kind.RESOURCE_SLICES, SLICE)
    patch = {"spec": {"pool": {"name": "node-a", "generation": 2, "resourceSliceCount": 1}}}
    updated = cluster.patch(Kind.RESOURCE_SLICES, "node-a-gpu", patch)
    assert updated["spec"]["pool"]["generation"] == 2
