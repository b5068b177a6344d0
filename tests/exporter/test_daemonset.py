"""``deploy/base/exporter-daemonset.yaml`` runs the exporter on GPU nodes, probed and scraped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "base" / "exporter-daemonset.yaml"


def test_the_daemonset_probes_healthz_and_is_scraped_on_its_port() -> None:
    daemonset: dict[str, Any] = next(
        doc for doc in yaml.safe_load_all(MANIFEST.read_text()) if doc["kind"] == "DaemonSet"
    )
    pod = daemonset["spec"]["template"]
    spec = pod["spec"]
    (container,) = spec["containers"]

    assert daemonset["kind"] == "DaemonSet"
    assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert spec["runtimeClassName"] == "nvidia"
    assert container["command"] == ["python", "-m", "exporter"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["path"] == "/healthz"
    port = container["ports"][0]["containerPort"]
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == str(port)
    env = {item["name"]: item for item in container["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert container["resources"]["requests"]
