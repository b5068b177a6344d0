"""`python -m apiemulator` runs on its own and writes a usable kubeconfig."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

from kube.client import Cluster
from kube.config import ClusterConfig
from kube.kinds import Kind

ROOT = Path(__file__).resolve().parents[2]


def test_python_m_apiemulator_serves_fixtures_and_version(
    tmp_path: Path, fixtures_dir: Path
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "apiemulator",
            "--port",
            "0",
            "--version",
            "v1.36.0",
            "--kubeconfig",
            str(kubeconfig),
            "--initial-resource-version",
            "7000",
            "--cluster-uid",
            "c1c1c1c1-0000-4000-8000-000000000000",
            "--fixtures",
            str(fixtures_dir / "deviceclasses.json"),
            str(fixtures_dir / "dra-example-driver.json"),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        match = re.search(r"serving at (http://\S+)", banner)
        assert match, banner + (process.stderr.read() if process.poll() is not None else "")
        with Cluster(ClusterConfig(kubeconfig=str(kubeconfig))) as cluster:
            assert cluster.version().git_version == "v1.36.0"
            assert len(cluster.list_page(Kind.DEVICE_CLASSES)["items"]) == 6
            assert len(cluster.list_page(Kind.RESOURCE_SLICES)["items"]) == 1
            assert cluster.identity() == "c1c1c1c1-0000-4000-8000-000000000000"
            assert int(cluster.list_page(Kind.NODES)["metadata"]["resourceVersion"]) > 7000
        assert match.group(1) in kubeconfig.read_text()
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
