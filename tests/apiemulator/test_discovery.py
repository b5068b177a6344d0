"""`/version`, discovery documents, error statuses, and kubectl against the emulator."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from apiemulator import Emulator
from dra.features import NEWEST_VERSION
from kube.client import Cluster
from kube.config import ClusterConfig


def fetch(emulator: Emulator, path: str, method: str = "GET") -> tuple[int, Any]:
    request = urllib.request.Request(f"{emulator.url}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_version_reports_the_configured_git_version() -> None:
    with (
        Emulator(port=0, version="v1.35.2") as emulator,
        Cluster(ClusterConfig(server=emulator.url)) as cluster,
    ):
        version = cluster.version()
    assert (version.git_version, version.major, version.minor) == ("v1.35.2", "1", "35")
    assert version.version == "1.35"


def test_version_defaults_to_the_newest_the_allocator_knows(cluster: Cluster) -> None:
    assert cluster.version().version == "{}.{}".format(*NEWEST_VERSION)


def test_a_short_version_gets_a_patch_level() -> None:
    with (
        Emulator(port=0, version="1.35") as emulator,
        Cluster(ClusterConfig(server=emulator.url)) as cluster,
    ):
        assert cluster.version().git_version == "v1.35.0"


def test_the_core_group_is_discoverable(emulator: Emulator) -> None:
    _, versions = fetch(emulator, "/api")
    _, resources = fetch(emulator, "/api/v1")
    by_name = {r["name"]: r for r in resources["resources"]}

    assert versions["versions"] == ["v1"]
    assert resources["groupVersion"] == "v1"
    assert {"namespaces", "nodes", "pods", "resourcequotas", "pods/status"} <= set(by_name)
    assert by_name["pods"]["namespaced"] is True and by_name["nodes"]["namespaced"] is False
    assert "watch" in by_name["pods"]["verbs"]


def test_the_resource_group_is_discoverable(emulator: Emulator) -> None:
    _, groups = fetch(emulator, "/apis")
    _, group = fetch(emulator, "/apis/resource.k8s.io")
    _, resources = fetch(emulator, "/apis/resource.k8s.io/v1")
    by_name = {r["name"]: r for r in resources["resources"]}

    assert [g["name"] for g in groups["groups"]] == ["resource.k8s.io"]
    assert group["preferredVersion"]["groupVersion"] == "resource.k8s.io/v1"
    assert by_name["resourceclaims"]["kind"] == "ResourceClaim"
    assert by_name["resourceslices"]["namespaced"] is False
    assert "resourceclaims/status" in by_name
    assert "resourceslices/status" not in by_name


@pytest.mark.parametrize(
    ("method", "path", "code", "reason"),
    [
        ("GET", "/apis/resource.k8s.io/v1beta1", 404, "NotFound"),
        ("GET", "/apis/resource.k8s.io/v1/widgets", 404, "NotFound"),
        ("GET", "/apis/resource.k8s.io/v1/resourceslices/x/status", 404, "NotFound"),
        ("POST", "/version", 405, "MethodNotAllowed"),
        ("POST", "/api/v1/nodes/x", 405, "MethodNotAllowed"),
        ("GET", "/api/v1/nodes?labelSelector=a+in+(b", 400, "BadRequest"),
    ],
)
def test_errors_are_status_objects(
    emulator: Emulator, method: str, path: str, code: int, reason: str
) -> None:
    status, body = fetch(emulator, path, method)
    assert status == code
    assert body["kind"] == "Status" and body["status"] == "Failure"
    assert body["reason"] == reason and body["code"] == code


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_lists_and_server_side_applies(emulator: Emulator, tmp_path: Path) -> None:
    kubeconfig = emulator.kubeconfig(tmp_path / "kubeconfig")
    env = {"KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    manifest = (
        '{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass",'
        '"metadata":{"name":"gpu.example.com"},"spec":{"selectors":[]}}'
    )
    applied = subprocess.run(
        ["kubectl", "apply", "--server-side", "--validate=false", "-f", "-"],
        input=manifest,
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    listed = subprocess.run(
        ["kubectl", "get", "deviceclasses", "-o", "name"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert applied.returncode == 0, applied.stderr
    assert listed.stdout.strip() == "deviceclass.resource.k8s.io/gpu.example.com"
