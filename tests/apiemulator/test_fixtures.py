"""Loading the kubectl `List` fixtures (`devices/fixtures`) keeps every object as captured."""

from __future__ import annotations

import json
from pathlib import Path

from apiemulator import Emulator
from kube.client import Cluster
from kube.kinds import Kind

FILES = [
    "deviceclasses.json",
    "nvidia-dgx-h100.json",
    "nvidia-a100-mig.json",
    "dra-example-driver.json",
    "claims.json",
    "pods.json",  # the claims' owners: without them the garbage collector deletes the claims
]


def items(path: Path) -> list[dict]:
    return json.loads(path.read_text())["items"]


def test_it_loads_the_fixture_files(
    emulator: Emulator, cluster: Cluster, fixtures_dir: Path
) -> None:
    loaded = emulator.load_files([fixtures_dir / name for name in FILES])
    expected = [i for name in FILES for i in items(fixtures_dir / name)]

    slices, _ = cluster.list_all(Kind.RESOURCE_SLICES, page_size=4)
    claims, _ = cluster.list_all(Kind.RESOURCE_CLAIMS)
    counts = {
        kind: sum(1 for i in expected if i["kind"] == kind)
        for kind in ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")
    }
    assert loaded == len(expected)
    assert len(slices) == counts["ResourceSlice"] == 15
    assert len(claims) == counts["ResourceClaim"]
    assert len(cluster.list_page(Kind.DEVICE_CLASSES)["items"]) == counts["DeviceClass"]
    assert (
        len(cluster.list_page(Kind.RESOURCE_CLAIM_TEMPLATES)["items"])
        == (counts["ResourceClaimTemplate"])
    )


def test_loading_a_directory_keeps_uids_specs_and_allocations(
    emulator: Emulator, cluster: Cluster, fixtures_dir: Path
) -> None:
    emulator.load_files(fixtures_dir)
    original = next(
        i
        for i in items(fixtures_dir / "claims.json")
        if i["metadata"]["name"] == "single-gpu" and i["kind"] == "ResourceClaim"
    )
    served = cluster.get(Kind.RESOURCE_CLAIMS, "single-gpu", original["metadata"]["namespace"])

    assert served["metadata"]["uid"] == original["metadata"]["uid"]
    assert served["metadata"]["creationTimestamp"] == original["metadata"]["creationTimestamp"]
    assert served["spec"] == original["spec"]
    assert served["status"] == original["status"]
    assert served["status"]["allocation"]["devices"]["results"]


def test_loading_creates_the_namespaces_and_nodes_fixtures_refer_to(
    emulator: Emulator, cluster: Cluster, fixtures_dir: Path
) -> None:
    emulator.load_files([fixtures_dir / name for name in FILES])  # no nodes.json: made here
    namespaces = {i["metadata"]["name"] for i in cluster.list_page(Kind.NAMESPACES)["items"]}
    nodes = {i["metadata"]["name"]: i for i in cluster.list_page(Kind.NODES)["items"]}
    slices = items(fixtures_dir / "nvidia-dgx-h100.json")
    owner = slices[0]["metadata"]["ownerReferences"][0]

    assert {"gpu-test1", "gpu-test4", "admin-access", "default"} <= namespaces
    assert {"dgx-h100-01", "dgx-h100-02", "dgx-a100-01"} <= set(nodes)
    assert nodes[owner["name"]]["metadata"]["uid"] == owner["uid"]


def test_the_server_assigns_fresh_resource_versions_to_loaded_objects(
    emulator: Emulator, cluster: Cluster, fixtures_dir: Path
) -> None:
    emulator.load_files(fixtures_dir / "deviceclasses.json")
    listed = cluster.list_page(Kind.DEVICE_CLASSES)
    versions = [int(i["metadata"]["resourceVersion"]) for i in listed["items"]]
    assert max(versions) <= int(listed["metadata"]["resourceVersion"]) == emulator.resource_version
