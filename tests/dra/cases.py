"""Small builders for allocator cases (resource.k8s.io/v1 JSON), shared by the allocator tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dra.allocator import run_case

# The demo cluster the project ships (devices/fixtures/README.md says what each file holds).
FIXTURES = Path(__file__).resolve().parents[2] / "devices" / "fixtures"

ALL_FEATURES = {
    "adminAccess": True,
    "prioritizedList": True,
    "partitionableDevices": True,
    "consumableCapacity": True,
    "deviceTaints": True,
    "deviceBinding": True,
    "deviceStatus": True,
}


def fixture_items(name: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURES / name).read_text())["items"]


def node(name: str = "node-1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def device(name: str, **attributes: Any) -> dict[str, Any]:
    """A device; keyword attributes become typed attributes (int/bool/string)."""
    result: dict[str, Any] = {"name": name}
    if attributes:
        result["attributes"] = {}
        for key, value in attributes.items():
            key = key.replace("__", "/").replace("_", ".") if "__" in key else key
            if isinstance(value, bool):
                result["attributes"][key] = {"bool": value}
            elif isinstance(value, int):
                result["attributes"][key] = {"int": value}
            else:
                result["attributes"][key] = {"string": value}
    return result


def resource_slice(
    name: str = "slice-1",
    devices: list[dict[str, Any]] | None = None,
    driver: str = "gpu.example.com",
    pool: str = "pool-1",
    node_name: str | None = "node-1",
    generation: int = 1,
    count: int = 1,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": devices if devices is not None else [device("gpu-0")],
    }
    if node_name is not None and not any(
        key in spec for key in ("allNodes", "nodeSelector", "perDeviceNodeSelection")
    ):
        body["nodeName"] = node_name
    body.update(spec)
    return {"metadata": {"name": name}, "spec": body}


def device_class(
    name: str = "gpu", *expressions: str, config: list[Any] | None = None
) -> dict[str, Any]:
    if not expressions:
        expressions = ('device.driver == "gpu.example.com"',)
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": text}} for text in expressions]}
    if config:
        spec["config"] = config
    return {"metadata": {"name": name}, "spec": spec}


def request(name: str = "req-0", device_class_name: str = "gpu", **exactly: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": device_class_name}
    selectors = exactly.pop("selectors", None)
    if selectors:
        body["selectors"] = [{"cel": {"expression": text}} for text in selectors]
    body.update(exactly)
    return {"name": name, "exactly": body}


def first_available(name: str, *subrequests: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subrequests)}


def subrequest(name: str, device_class_name: str = "gpu", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "deviceClassName": device_class_name}
    selectors = fields.pop("selectors", None)
    if selectors:
        body["selectors"] = [{"cel": {"expression": text}} for text in selectors]
    body.update(fields)
    return body


def claim(
    name: str = "claim-0",
    requests: list[dict[str, Any]] | None = None,
    constraints: list[dict[str, Any]] | None = None,
    config: list[dict[str, Any]] | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": requests if requests is not None else [request()]}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"devices": devices}}


def allocated_claim(*results: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "taken", "namespace": "default"},
        "status": {"allocation": {"devices": {"results": list(results)}}},
    }


def result(
    device_name: str, pool: str = "pool-1", driver: str = "gpu.example.com", **extra: Any
) -> dict[str, Any]:
    return {"request": "r", "driver": driver, "pool": pool, "device": device_name, **extra}


def case(
    claims: list[dict[str, Any]] | None = None,
    slices: list[dict[str, Any]] | None = None,
    classes: list[dict[str, Any]] | None = None,
    nodes: list[dict[str, Any]] | None = None,
    allocated: list[dict[str, Any]] | None = None,
    features: dict[str, bool] | None = None,
    version: str | None = None,
    node_name: str | None = "node-1",
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "case",
        "features": ALL_FEATURES if features is None else features,
        "nodes": nodes if nodes is not None else [node()],
        "deviceClasses": classes if classes is not None else [device_class()],
        "resourceSlices": slices if slices is not None else [resource_slice()],
        "allocatedClaims": allocated or [],
        "claims": claims if claims is not None else [claim()],
        "node": node_name,
    }
    if version is not None:
        body["kubernetesVersion"] = version
    return body


def run(**kwargs: Any) -> dict[str, Any]:
    return run_case(case(**kwargs))


def devices_of(output: dict[str, Any], claim_index: int = 0) -> list[str]:
    """The picked device names of one claim (or the status when not allocated)."""
    assert output["status"] == "allocated", output
    results = output["allocations"][claim_index]["devices"].get("results", [])
    return [entry["device"] for entry in results]
