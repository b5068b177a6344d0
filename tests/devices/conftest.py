"""Fixtures of the cluster-mirror tests."""

from __future__ import annotations

import pytest

from tests.devices.cluster_data import load_fixture_cluster


@pytest.fixture
def mirrored_cluster(db: None) -> None:
    """The mirror holds the demo cluster: 2 DGX H100, a DGX A100 with MIG placements, the
    dra-example-driver node, the legacy node gpu-legacy-01, device classes, claims and pods."""
    load_fixture_cluster()
