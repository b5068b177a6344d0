"""Do the fixtures survive in a real cluster? (A manual check, not a test.)

    KUBECONFIG=/path/to/kubeconfig \\
        .venv/bin/python manage.py shell < scripts/real_cluster_fixtures.py

Loads devices/fixtures with ``manage.py load_fixtures`` (into an empty cluster, or one that has
them already), records the uid of every fixture object the cluster holds, waits
``FIXTURE_WAIT_SECONDS`` (default 300: several passes of kube-controller-manager's garbage
collector), and reports every object that went or changed identity. Before waiting it checks
the collector is running: a claim owned by a pod uid that does not exist must go within 30 s.
"""

import os
import time

from django.core.management import call_command

from kube.errors import NotFound
from kube.kinds import Kind
from mirror.fixture_loader import LOAD_ORDER, read_fixture_files
from portal.cluster import connected

WAIT = int(os.environ.get("FIXTURE_WAIT_SECONDS", "300"))
PROBE = "fixture-check-orphan-probe"


def identities(cluster, objects):
    found = {}
    for obj in objects:
        kind = obj.get("kind")
        if kind not in LOAD_ORDER:
            continue
        meta = obj["metadata"]
        cluster_kind = LOAD_ORDER[kind][0]
        namespace = (
            meta.get("namespace")
            if kind in ("Pod", "ResourceClaim", "ResourceClaimTemplate")
            else None
        )
        label = f"{kind} {namespace + '/' if namespace else ''}{meta['name']}"
        try:
            found[label] = cluster.get(cluster_kind, meta["name"], namespace)["metadata"]["uid"]
        except NotFound:
            found[label] = None
    return found


def collector_runs(cluster, namespace):
    probe = {
        "metadata": {
            "name": PROBE,
            "namespace": namespace,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": "absent",
                    "uid": "00000000-0000-4000-8000-000000000000",
                }
            ],
        },
        "spec": {
            "devices": {
                "requests": [{"name": "r", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]
            }
        },
    }
    cluster.create(Kind.RESOURCE_CLAIMS, probe)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            cluster.get(Kind.RESOURCE_CLAIMS, PROBE, namespace)
        except NotFound:
            return True
        time.sleep(1)
    cluster.delete(Kind.RESOURCE_CLAIMS, PROBE, namespace)
    return False


call_command("load_fixtures")
objects = read_fixture_files(["devices/fixtures"])
with connected() as cluster:
    before = identities(cluster, objects)
    missing = sorted(label for label, uid in before.items() if uid is None)
    print(f"{len(before)} fixture objects, {len(missing)} missing after loading: {missing}")
    print("garbage collector running:", collector_runs(cluster, "gpu-test1"))
    print(f"waiting {WAIT} s ...")
    time.sleep(WAIT)
    after = identities(cluster, objects)
changed = sorted(label for label in before if after.get(label) != before[label])
print(f"after {WAIT} s: {len(changed)} gone or re-created: {changed}")
print("FIXTURES KEPT" if not changed and not missing else "FIXTURES NOT KEPT")
