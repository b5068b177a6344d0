"""A watcher whose control plane comes back with a new CA and new tokens recovers on its next
try, within its bounded run, once its configuration names them.

Before, every watcher kept its client (and the old CA) for the rest of its run: TLS failed for
158 s, until the 240 s run ended and the next one read the kubeconfig again.
"""

from __future__ import annotations

import pytest

from apiemulator import Emulator
from devices.models import Node
from harness.fixtures import fixture_objects
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.kinds import Kind
from mirror.models import MirrorStatus
from mirror.reflector import Reflector
from tests.pki import FIRST, SECOND

pytestmark = pytest.mark.django_db

REPLACEMENT_NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-new-01"}}


def test_a_watcher_follows_a_control_plane_back_with_a_new_ca_and_token_within_its_run(
    tmp_path,
):
    nodes = [item for item in fixture_objects() if item["kind"] in ("Namespace", "Node")]
    with Emulator(port=0, bookmark_interval=0.2, tls=FIRST, tokens={"first"}) as emulator:
        emulator.load(nodes)
        kubeconfig = emulator.kubeconfig(tmp_path / "kubeconfig", token="first")
        replaced: list[str] = []

        def replace_once_mirrored() -> bool:
            """The run's keepalive: replaces the control plane once the watcher has mirrored
            the first one, and ends the run once it has mirrored the replacement."""
            names = set(Node.objects.values_list("name", flat=True))
            if not replaced:
                if len(names) == 5:
                    replaced.append(emulator.replace_cluster())
                    emulator.use_tls(SECOND)
                    emulator.use_tokens({"second"})
                    emulator.load([REPLACEMENT_NODE])
                    emulator.kubeconfig(kubeconfig, token="second")  # as its operator would
                return True
            return names != {"gpu-new-01"}

        with Cluster(ClusterConfig(kubeconfig=str(kubeconfig), read_timeout=5)) as cluster:
            reflector = Reflector(Kind.NODES, cluster, watch_seconds=1)
            reflector.run(seconds=30, keepalive=replace_once_mirrored)

    assert replaced, "the first control plane was never mirrored"
    assert set(Node.objects.values_list("name", flat=True)) == {"gpu-new-01"}
    status = MirrorStatus.objects.get(kind="nodes")
    assert status.cluster_uid == replaced[0]
    assert status.last_error == ""
