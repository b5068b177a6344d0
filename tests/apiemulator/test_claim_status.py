"""A claim's allocation is immutable once set, as on a real API server."""

from __future__ import annotations

import pytest

from apiemulator import Emulator
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.errors import Invalid
from kube.kinds import Kind

CLAIM = {
    "metadata": {"name": "c", "namespace": "default"},
    "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "x"}}]}},
}
ALLOCATION = {
    "devices": {"results": [{"request": "r", "driver": "d", "pool": "p", "device": "g0"}]}
}


@pytest.fixture
def cluster():
    with Emulator(port=0) as emulator, Cluster(ClusterConfig(server=emulator.url)) as client:
        yield client


def test_an_allocation_may_be_set_and_cleared_but_not_changed(cluster):
    cluster.create(Kind.RESOURCE_CLAIMS, CLAIM)
    cluster.patch_status(
        Kind.RESOURCE_CLAIMS, "c", {"status": {"allocation": ALLOCATION}}, namespace="default"
    )
    changed = {**ALLOCATION, "allocationTimestamp": "2026-11-23T18:00:00Z"}
    with pytest.raises(Invalid, match="status.allocation: Invalid value: field is immutable"):
        cluster.patch_status(
            Kind.RESOURCE_CLAIMS, "c", {"status": {"allocation": changed}}, namespace="default"
        )
    cluster.patch_status(
        Kind.RESOURCE_CLAIMS, "c", {"status": {"allocation": None}}, namespace="default"
    )
    assert "allocation" not in (
        cluster.get(Kind.RESOURCE_CLAIMS, "c", "default").get("status") or {}
    )
