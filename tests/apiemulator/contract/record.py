"""Record what a real kube-apiserver answers the requests of `test_contract.py`.

    python tests/apiemulator/contract/record.py --kubeconfig /path/to/kubeconfig \
        --kubectl /path/to/kubectl > tests/apiemulator/contract/real-1.36.3.json

Each case is sent in order (some need the ones before: the apply conflict needs the first
apply). The cluster must be one you may write to, with a kube-scheduler and a
kube-controller-manager (the quota and resourceclaim controllers) and no kubelet on the nodes it
makes: the script creates the namespace ``emu-contract``, ResourceSlices, Nodes and a DeviceClass
named ``emu-contract…``, and deletes them when done. The output keeps, per case, the request and
the status code, ``reason``, message and ``Warning`` headers the server answered; the test
replays the requests against the emulator. Under ``tables`` it keeps the objects made for the
Table cases as the server held them, the Table answers (whole), and what ``--kubectl`` sent
(its ``-v=8`` log) and printed for ``KUBECTL_COMMANDS``.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import yaml

NS = "emu-contract"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
PODS = f"/api/v1/namespaces/{NS}/pods"


def _slice(name: str, **spec: Any) -> dict[str, Any]:
    body = {"driver": "contract.example.com", "nodeName": "contract-node"}
    body |= {"pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": body | spec,
    }


def _case(
    name: str, method: str, path: str, query: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    return {"name": name, "method": method, "path": path, "query": query or {}, **extra}


APPLY = "application/apply-patch+yaml"


def _labelled(**labels: str) -> dict[str, Any]:
    body = _slice("emu-contract-apply")
    body["metadata"]["labels"] = labels
    return body


_APPLY_PATH = f"{SLICES}/emu-contract-apply"

# `gist`: a phrase the server's message must contain (checked here and in the test).
CASES: list[dict[str, Any]] = [
    _case("version", "GET", "/version"),
    _case(
        "rvmatch-without-rv",
        "GET",
        SLICES,
        {"resourceVersionMatch": "NotOlderThan"},
        gist="resourceVersionMatch is forbidden unless resourceVersion is provided",
    ),
    _case(
        "rvmatch-exact-compacted",
        "GET",
        SLICES,
        {"resourceVersion": "1", "resourceVersionMatch": "Exact"},
        gist="The resourceVersion for the provided list is too old.",
    ),
    _case(
        "continue-with-rv",
        "GET",
        SLICES,
        {
            "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJhIn0",
            "resourceVersion": "5",
        },
        gist="specifying resource version is not allowed when using continue",
    ),
]
for _field, _ok in (
    ("metadata.name", True),
    ("spec.nodeName", True),
    ("spec.driver", True),
    ("spec.pool.name", False),
    ("spec.allNodes", False),
):
    CASES.append(
        _case(
            f"slice-field-{_field}",
            "GET",
            SLICES,
            {"fieldSelector": f"{_field}=x"},
            **({} if _ok else {"gist": f"Kind=ResourceSlice: {_field}"}),
        )
    )
for _path, _field, _ok in (
    (PODS, "spec.nodeName", True),
    (PODS, "status.phase", True),
    (PODS, "spec.schedulerName", True),
    (PODS, "spec.serviceAccountName", True),
    (PODS, "spec.restartPolicy", True),
    (PODS, "status.podIP", True),
    (PODS, "status.nominatedNodeName", True),
    (PODS, "spec.priorityClassName", False),
    ("/api/v1/nodes", "spec.unschedulable", True),
    ("/api/v1/nodes", "spec.providerID", False),
    ("/api/v1/namespaces", "status.phase", True),
    ("/api/v1/namespaces", "metadata.namespace", False),
    (f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims", "metadata.namespace", True),
    (f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims", "spec.devices", False),
    ("/apis/resource.k8s.io/v1/deviceclasses", "metadata.name", True),
    ("/apis/resource.k8s.io/v1/deviceclasses", "spec.extendedResourceName", False),
    (f"/api/v1/namespaces/{NS}/resourcequotas", "metadata.name", True),
    (f"/api/v1/namespaces/{NS}/resourcequotas", "spec.hard", False),
):
    _kind = _path.rsplit("/", 1)[1]
    _gist = (
        "field label not supported"
        if _path.startswith("/api/v1/") and _kind != "resourcequotas"
        else "is not a known field selector"
    )
    CASES.append(
        _case(
            f"{_kind}-field-{_field}",
            "GET",
            _path,
            {"fieldSelector": f"{_field}=x"},
            **({} if _ok else {"gist": _gist}),
        )
    )
CASES += [
    _case(
        "create-unknown-field",
        "POST",
        SLICES,
        body=_slice("emu-contract-unknown", foo="bar"),
        warning='unknown field \\"spec.foo\\"',
    ),
    _case("get-unknown-field-dropped", "GET", f"{SLICES}/emu-contract-unknown", absent="spec.foo"),
    _case(
        "create-unknown-field-strict",
        "POST",
        SLICES,
        {"fieldValidation": "Strict"},
        body=_slice("emu-contract-strict", foo="bar"),
        gist='strict decoding error: unknown field "spec.foo"',
    ),
    _case(
        "create-unknown-top-level-field-strict",
        "POST",
        SLICES,
        {"fieldValidation": "Strict"},
        body=_slice("emu-contract-strict") | {"bar": 1},
        gist='unknown field "bar"',
    ),
    _case(
        "update-unknown-field-strict",
        "PUT",
        f"{SLICES}/emu-contract-unknown",
        {"fieldValidation": "Strict"},
        body=_slice("emu-contract-unknown", foo="bar"),
        gist='strict decoding error: unknown field "spec.foo"',
    ),
    _case(
        "update-unknown-field",
        "PUT",
        f"{SLICES}/emu-contract-unknown",
        body=_slice("emu-contract-unknown", foo="bar"),
        warning='unknown field \\"spec.foo\\"',
    ),
    _case(
        "apply-first-manager",
        "PATCH",
        _APPLY_PATH,
        {"fieldManager": "alpha"},
        body=_labelled(team="a", shared="x"),
        content_type=APPLY,
    ),
    _case(
        "apply-second-manager-same-value",
        "PATCH",
        _APPLY_PATH,
        {"fieldManager": "beta"},
        body=_labelled(shared="x"),
        content_type=APPLY,
    ),
    _case(
        "apply-third-manager-conflict",
        "PATCH",
        _APPLY_PATH,
        {"fieldManager": "gamma"},
        body=_labelled(team="b"),
        content_type=APPLY,
        gist='Apply failed with 1 conflict: conflict with "alpha"',
    ),
    _case(
        "apply-two-owners-conflict",
        "PATCH",
        _APPLY_PATH,
        {"fieldManager": "gamma"},
        body=_labelled(shared="y"),
        content_type=APPLY,
        gist="Apply failed with 2 conflicts",
    ),
    _case(
        "apply-third-manager-force",
        "PATCH",
        _APPLY_PATH,
        {"fieldManager": "gamma", "force": "true"},
        body=_labelled(team="b"),
        content_type=APPLY,
    ),
    _case(
        "apply-first-manager-after-takeover",
        "PATCH",
        _APPLY_PATH,
        {"fieldManager": "alpha"},
        body=_labelled(team="a", shared="x"),
        content_type=APPLY,
        gist='Apply failed with 1 conflict: conflict with "gamma"',
    ),
    _case(
        "update-takes-over-without-conflict",
        "PATCH",
        _APPLY_PATH,
        {"fieldManager": "delta"},
        body={"metadata": {"labels": {"team": "c"}}},
        content_type="application/merge-patch+json",
    ),
    _case(
        "update-slice-node-name-immutable",
        "PATCH",
        _APPLY_PATH,
        body={"spec": {"nodeName": "other-node"}},
        content_type="application/merge-patch+json",
        gist='spec.nodeName: Invalid value: "other-node": field is immutable',
    ),
    _case(
        "update-slice-driver-immutable",
        "PATCH",
        _APPLY_PATH,
        body={"spec": {"driver": "other.example.com"}},
        content_type="application/merge-patch+json",
        gist='spec.driver: Invalid value: "other.example.com": field is immutable',
    ),
    _case(
        "strategic-patch-directives-are-not-unknown-fields",
        "PATCH",
        _APPLY_PATH,
        {"fieldValidation": "Strict"},
        body={"metadata": {"labels": {"x": "y"}, "$setElementOrder/finalizers": []}},
        content_type="application/strategic-merge-patch+json",
    ),
    _case(
        "create-unknown-device-field",
        "POST",
        SLICES,
        body=_slice("emu-contract-deep", devices=[{"name": "d0", "foo": 1}]),
        warning='unknown field \\"spec.devices[0].foo\\"',
    ),
]

SETUP = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
]


# -- Tables: what `kubectl get` shows -------------------------------------------------------
#
# Objects of every kind the emulator serves, in the states whose printed columns differ, are
# made on the real server (statuses written through the status subresource, as the kubelet,
# the scheduler and the quota controller would), then read back whole: the test loads those
# into the emulator and asks both the same Table requests.

TABLE_LABELS = {"emu-contract": "table"}
TABLE_SELECTOR = {"labelSelector": "emu-contract=table"}
TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"
# What `kubectl get` sends for a human-readable printer (`transformRequests` in kubectl's
# get.go); `--kubectl` checks it against the real kubectl's `-v=8` log.
KUBECTL_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
CLASS = "emu-contract.example.com"
NODE_A, NODE_B = "emu-contract-node-a", "emu-contract-node-b"
RESOURCE = "/apis/resource.k8s.io/v1"
NS_RESOURCE = f"{RESOURCE}/namespaces/{NS}"
STAMP = "2026-01-05T10:00:00Z"


def _labelled_object(api_version: str, kind: str, name: str, **rest: Any) -> dict[str, Any]:
    meta = {"name": name, "labels": dict(TABLE_LABELS)} | rest.pop("metadata", {})
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **rest}


def _claim_spec() -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": CLASS}}
    return {"devices": {"requests": [request]}}


def _allocation(device: str) -> dict[str, Any]:
    result = {"request": "gpu", "driver": CLASS, "pool": NODE_A, "device": device}
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE_A]}]}
    return {"devices": {"results": [result]}, "nodeSelector": {"nodeSelectorTerms": [term]}}


def _pod(name: str, node: str | None = None, **spec: Any) -> dict[str, Any]:
    containers = spec.pop("containers", None) or [
        {"name": "app", "image": "registry.invalid/app:1"}
    ]
    body = {"containers": containers, **spec}
    if node:
        body["nodeName"] = node
    return _labelled_object("v1", "Pod", name, metadata={"namespace": NS}, spec=body)


def _running(name: str, ready: bool = True, restarts: int = 0) -> dict[str, Any]:
    status: dict[str, Any] = {
        "name": name,
        "image": f"registry.invalid/{name}:1",
        "imageID": "",
        "ready": ready,
        "restartCount": restarts,
        "started": True,
        "state": {"running": {"startedAt": STAMP}},
    }
    if not ready:
        status |= {"started": False, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    return status


def _terminated(name: str, code: int, reason: str) -> dict[str, Any]:
    finished = {"exitCode": code, "reason": reason, "startedAt": STAMP, "finishedAt": STAMP}
    return {
        "name": name,
        "image": f"registry.invalid/{name}:1",
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        "started": False,
        "state": {"terminated": finished},
    }


def _conditions(**types: str) -> list[dict[str, str]]:
    """Pod conditions by type (``Ready="True"``); ``attached`` is the readiness gate's."""
    names = {"attached": "example.com/attached"}
    return [
        {"type": names.get(t, t), "status": s, "lastTransitionTime": STAMP}
        for t, s in types.items()
    ]


def _running_pod(ip: str, *containers: dict[str, Any], **conditions: str) -> dict[str, Any]:
    """The status a kubelet writes for a running pod."""
    ready = str(all(c["ready"] for c in containers))
    return {
        "phase": "Running",
        "conditions": _conditions(
            Initialized="True",
            Ready=ready,
            ContainersReady=ready,
            PodScheduled="True",
            **conditions,
        ),
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": STAMP,
        "containerStatuses": list(containers),
    }


TWO_CONTAINERS = [
    {"name": "app", "image": "registry.invalid/app:1"},
    {"name": "sidecar", "image": "registry.invalid/sidecar:1"},
]

# (object, status written afterwards through its status subresource or None)
TABLE_OBJECTS: list[tuple[dict[str, Any], dict[str, Any] | None]] = [
    (
        _labelled_object(
            "resource.k8s.io/v1",
            "DeviceClass",
            CLASS,
            spec={"selectors": [{"cel": {"expression": f"device.driver == '{CLASS}'"}}]},
        ),
        None,
    ),
    (
        _labelled_object(
            "v1",
            "Node",
            NODE_A,
            metadata={
                "labels": TABLE_LABELS
                | {
                    "node-role.kubernetes.io/worker": "",
                    "node-role.kubernetes.io/gpu": "",
                    "kubernetes.io/hostname": NODE_A,
                }
            },
        ),
        {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "hand-made node, no kubelet",
                    "lastHeartbeatTime": STAMP,
                    "lastTransitionTime": STAMP,
                }
            ],
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.7"},
                {"type": "ExternalIP", "address": "203.0.113.7"},
                {"type": "Hostname", "address": NODE_A},
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": "v1.36.3",
                "kubeProxyVersion": "",
                "containerRuntimeVersion": "containerd://2.1.0",
                "kernelVersion": "6.8.0-45-generic",
                "osImage": "Ubuntu 24.04.1 LTS",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
            },
        },
    ),
    (
        _labelled_object(
            "v1",
            "Node",
            NODE_B,
            metadata={"labels": TABLE_LABELS | {"kubernetes.io/role": "spare"}},
            spec={"unschedulable": True},
        ),
        {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "KubeletNotReady",
                    "message": "hand-made node, no kubelet",
                    "lastHeartbeatTime": STAMP,
                    "lastTransitionTime": STAMP,
                }
            ]
        },
    ),
    (
        _labelled_object(
            "resource.k8s.io/v1",
            "ResourceSlice",
            f"{NODE_A}-{CLASS}",
            spec={
                "driver": CLASS,
                "nodeName": NODE_A,
                "pool": {"name": NODE_A, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": f"gpu-{i}"} for i in range(3)],
            },
        ),
        None,
    ),
    (
        _labelled_object(
            "resource.k8s.io/v1",
            "ResourceSlice",
            f"emu-contract-shared-{CLASS}",
            spec={
                "driver": CLASS,
                "allNodes": True,
                "pool": {"name": "shared", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "fabric-0"}],
            },
        ),
        None,
    ),
    (
        _labelled_object(
            "resource.k8s.io/v1",
            "ResourceClaimTemplate",
            "emu-contract-gpu",
            metadata={"namespace": NS},
            spec={"spec": _claim_spec()},
        ),
        None,
    ),
    *(
        (
            _labelled_object(
                "resource.k8s.io/v1",
                "ResourceClaim",
                name,
                metadata={"namespace": NS} | extra,
                spec=_claim_spec(),
            ),
            None,
        )
        for name, extra in (
            ("emu-contract-pending", {}),
            ("emu-contract-allocated", {}),
            ("emu-contract-reserved", {}),
            ("emu-contract-deleting", {"finalizers": ["example.com/hold"]}),
        )
    ),
    (
        _pod(
            "emu-contract-running",
            NODE_A,
            containers=TWO_CONTAINERS,
            readinessGates=[{"conditionType": "example.com/attached"}],
            resourceClaims=[{"name": "gpu", "resourceClaimName": "emu-contract-reserved"}],
        ),
        _running_pod("10.1.0.7", _running("app"), _running("sidecar"), attached="True"),
    ),
    (
        _pod("emu-contract-crashing", NODE_A, containers=TWO_CONTAINERS),
        _running_pod("10.1.0.8", _running("app"), _running("sidecar", ready=False, restarts=4)),
    ),
    (_pod("emu-contract-unschedulable", nodeSelector={"emu-contract/none": "true"}), None),
    (_pod("emu-contract-gated", schedulingGates=[{"name": "example.com/wait"}]), None),
    (
        _pod(
            "emu-contract-initializing",
            NODE_A,
            initContainers=[{"name": "init", "image": "registry.invalid/init:1"}],
        ),
        {
            "phase": "Pending",
            "conditions": _conditions(Initialized="False", Ready="False", PodScheduled="True"),
            "startTime": STAMP,
            "initContainerStatuses": [_running("init") | {"ready": False}],
            "containerStatuses": [
                {
                    "name": "app",
                    "image": "registry.invalid/app:1",
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "started": False,
                    "state": {"waiting": {"reason": "PodInitializing"}},
                }
            ],
        },
    ),
    (
        _pod("emu-contract-succeeded", NODE_A, restartPolicy="Never"),
        {
            "phase": "Succeeded",
            "conditions": _conditions(Initialized="True", Ready="False", PodScheduled="True"),
            "startTime": STAMP,
            "containerStatuses": [_terminated("app", 0, "Completed")],
        },
    ),
    (
        _pod("emu-contract-failed", NODE_A, restartPolicy="Never"),
        {
            "phase": "Failed",
            "conditions": _conditions(Initialized="True", Ready="False", PodScheduled="True"),
            "startTime": STAMP,
            "containerStatuses": [_terminated("app", 1, "Error")],
        },
    ),
    (
        _pod("emu-contract-terminating", NODE_A),
        _running_pod("10.1.0.9", _running("app")),
    ),
]
# Written once the quota controller knows the claims above (admission needs its status).
TABLE_QUOTA = _labelled_object(
    "v1",
    "ResourceQuota",
    "emu-contract-quota",
    metadata={"namespace": NS},
    spec={
        "hard": {
            "count/resourceclaims.resource.k8s.io": "10",
            f"{CLASS}.deviceclass.resource.k8s.io/devices": "4",
            "requests.cpu": "500m",
            "limits.memory": "1Gi",
        }
    },
)
_OBJECT_PATHS = {
    "DeviceClass": f"{RESOURCE}/deviceclasses",
    "ResourceSlice": f"{RESOURCE}/resourceslices",
    "ResourceClaimTemplate": f"{NS_RESOURCE}/resourceclaimtemplates",
    "ResourceClaim": f"{NS_RESOURCE}/resourceclaims",
    "Node": "/api/v1/nodes",
    "Pod": PODS,
    "ResourceQuota": f"/api/v1/namespaces/{NS}/resourcequotas",
    "Namespace": "/api/v1/namespaces",
}


def _table_case(
    name: str,
    path: str,
    query: dict[str, str] | None = None,
    accept: str = TABLE,
    method: str = "GET",
) -> dict[str, Any]:
    return {"name": name, "method": method, "path": path, "query": query or {}, "accept": accept}


TABLE_CASES: list[dict[str, Any]] = [
    # every kind, listed as kubectl lists it, and one object of each
    _table_case("deviceclasses", _OBJECT_PATHS["DeviceClass"], TABLE_SELECTOR, KUBECTL_ACCEPT),
    _table_case("resourceslices", _OBJECT_PATHS["ResourceSlice"], TABLE_SELECTOR, KUBECTL_ACCEPT),
    _table_case("resourceclaims", _OBJECT_PATHS["ResourceClaim"], {}, KUBECTL_ACCEPT),
    _table_case(
        "resourceclaims-all-namespaces",
        f"{RESOURCE}/resourceclaims",
        TABLE_SELECTOR,
        KUBECTL_ACCEPT,
    ),
    _table_case(
        "resourceclaimtemplates", _OBJECT_PATHS["ResourceClaimTemplate"], {}, KUBECTL_ACCEPT
    ),
    _table_case(
        "namespaces", "/api/v1/namespaces", {"fieldSelector": f"metadata.name={NS}"}, KUBECTL_ACCEPT
    ),
    _table_case("nodes", "/api/v1/nodes", TABLE_SELECTOR, KUBECTL_ACCEPT),
    _table_case("pods", PODS, {}, KUBECTL_ACCEPT),
    _table_case("pods-all-namespaces", "/api/v1/pods", TABLE_SELECTOR, KUBECTL_ACCEPT),
    _table_case("resourcequotas", _OBJECT_PATHS["ResourceQuota"], {}, KUBECTL_ACCEPT),
    _table_case("get-deviceclass", f"{_OBJECT_PATHS['DeviceClass']}/{CLASS}"),
    _table_case("get-resourceslice", f"{_OBJECT_PATHS['ResourceSlice']}/{NODE_A}-{CLASS}"),
    _table_case("get-resourceclaim", f"{_OBJECT_PATHS['ResourceClaim']}/emu-contract-reserved"),
    _table_case(
        "get-resourceclaimtemplate", f"{_OBJECT_PATHS['ResourceClaimTemplate']}/emu-contract-gpu"
    ),
    _table_case("get-namespace", f"/api/v1/namespaces/{NS}"),
    _table_case("get-node", f"/api/v1/nodes/{NODE_A}"),
    _table_case("get-pod", f"{PODS}/emu-contract-running"),
    _table_case("get-resourcequota", f"{_OBJECT_PATHS['ResourceQuota']}/emu-contract-quota"),
    # includeObject, pages, an empty list, the older Table version
    _table_case("include-object", PODS, {"includeObject": "Object"}),
    _table_case("include-metadata", _OBJECT_PATHS["ResourceClaim"], {"includeObject": "Metadata"}),
    _table_case("include-none", _OBJECT_PATHS["ResourceClaim"], {"includeObject": "None"}),
    _table_case("include-object-get", f"/api/v1/nodes/{NODE_A}", {"includeObject": "Object"}),
    _table_case("include-object-invalid", PODS, {"includeObject": "Everything"}),
    _table_case(
        "include-object-invalid-missing-object",
        f"{_OBJECT_PATHS['ResourceClaim']}/emu-contract-missing",
        {"includeObject": "Everything"},
    ),
    _table_case("first-page", PODS, {"limit": "2"}),
    _table_case("empty-list", f"{RESOURCE}/namespaces/default/resourceclaims", TABLE_SELECTOR),
    _table_case(
        "table-v1beta1",
        _OBJECT_PATHS["ResourceClaim"],
        {},
        "application/json;as=Table;g=meta.k8s.io;v=v1beta1",
    ),
    _table_case("missing-object", f"{_OBJECT_PATHS['ResourceClaim']}/emu-contract-missing"),
    # what the server cannot make
    _table_case(
        "table-unknown-version",
        _OBJECT_PATHS["ResourceClaim"],
        {},
        "application/json;as=Table;g=meta.k8s.io;v=v2",
    ),
    _table_case(
        "table-unknown-version-missing-object",
        f"{_OBJECT_PATHS['ResourceClaim']}/emu-contract-missing",
        {},
        "application/json;as=Table;g=meta.k8s.io;v=v2",
    ),
    _table_case(
        "table-unknown-group",
        _OBJECT_PATHS["ResourceClaim"],
        {},
        "application/json;as=Table;g=example.com;v=v1",
    ),
    _table_case(
        "table-without-group", _OBJECT_PATHS["ResourceClaim"], {}, "application/json;as=Table"
    ),
    _table_case(
        "table-unknown-kind",
        _OBJECT_PATHS["ResourceClaim"],
        {},
        "application/json;as=Chart;g=meta.k8s.io;v=v1",
    ),
    _table_case(
        "table-unknown-version-falls-back",
        _OBJECT_PATHS["ResourceClaim"],
        {},
        "application/json;as=Table;g=meta.k8s.io;v=v2,application/json",
    ),
    _table_case(
        "table-in-protobuf",
        _OBJECT_PATHS["ResourceClaim"],
        {},
        "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1",
    ),
    _table_case(
        "partial-metadata-list",
        _OBJECT_PATHS["ResourceClaim"],
        TABLE_SELECTOR,
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    ),
    _table_case(
        "partial-metadata",
        f"{_OBJECT_PATHS['ResourceClaim']}/emu-contract-pending",
        {},
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    ),
    _table_case(
        "partial-metadata-of-a-list",
        _OBJECT_PATHS["ResourceClaim"],
        {},
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    ),
    _table_case(
        "partial-metadata-list-of-an-object",
        f"{_OBJECT_PATHS['ResourceClaim']}/emu-contract-pending",
        {},
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    ),
    _table_case("status-subresource", f"{PODS}/emu-contract-running/status"),
    _table_case("discovery", RESOURCE),
    _table_case("version", "/version"),
    # a watch (kubectl get -w), a write and a delete
    _table_case(
        "watch",
        _OBJECT_PATHS["ResourceClaim"],
        {"watch": "1", "timeoutSeconds": "1"},
        KUBECTL_ACCEPT,
    ),
    _table_case(
        "create",
        _OBJECT_PATHS["ResourceClaimTemplate"],
        {},
        TABLE,
        "POST",
    ),
    _table_case(
        "delete",
        f"{_OBJECT_PATHS['ResourceClaimTemplate']}/emu-contract-created",
        {},
        TABLE,
        "DELETE",
    ),
]
TABLE_CASES[-2]["body"] = _labelled_object(
    "resource.k8s.io/v1",
    "ResourceClaimTemplate",
    "emu-contract-created",
    metadata={"namespace": NS, "labels": {}},
    spec={"spec": _claim_spec()},
)
# `kubectl get` against the real server; the test runs the same commands against the emulator
KUBECTL_COMMANDS = [
    ["get", "resourceclaims", "-A", "-l", "emu-contract=table"],
    ["get", "pods", "-A", "-o", "wide", "-l", "emu-contract=table"],
    ["get", "resourceslices", "-l", "emu-contract=table"],
    ["get", "resourceslices", "-o", "wide", "-l", "emu-contract=table"],
    ["get", "deviceclasses", "-l", "emu-contract=table"],
    ["get", "resourceclaimtemplates", "-n", NS],
    ["get", "nodes", "-o", "wide", "-l", "emu-contract=table"],
    ["get", "namespace", NS],
    ["get", "resourcequotas", "-n", NS],
    ["get", "pods", "-n", NS, "--show-labels"],
]


class Client:
    def __init__(self, kubeconfig: Path) -> None:
        config = yaml.safe_load(kubeconfig.read_text())
        context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
        cluster = next(c for c in config["clusters"] if c["name"] == context["context"]["cluster"])
        user = next(u for u in config["users"] if u["name"] == context["context"]["user"])
        self.server = cluster["cluster"]["server"]
        self.tmp = tempfile.TemporaryDirectory()
        tmp = Path(self.tmp.name)
        self.ssl = ssl.create_default_context()
        ca = cluster["cluster"].get("certificate-authority-data")
        if ca:
            (tmp / "ca.crt").write_bytes(base64.b64decode(ca))
            self.ssl.load_verify_locations(tmp / "ca.crt")
        self.headers: dict[str, str] = {}
        if "client-certificate-data" in user["user"]:
            (tmp / "tls.crt").write_bytes(base64.b64decode(user["user"]["client-certificate-data"]))
            (tmp / "tls.key").write_bytes(base64.b64decode(user["user"]["client-key-data"]))
            self.ssl.load_cert_chain(tmp / "tls.crt", tmp / "tls.key")
        elif "token" in user["user"]:
            self.headers["Authorization"] = f"Bearer {user['user']['token']}"

    def request(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> tuple[int, Any, bytes]:
        """The status code, headers and body of one request."""
        url = self.server + path + (f"?{urlencode(query)}" if query else "")
        data = json.dumps(body).encode() if body is not None else None
        headers = {**self.headers, "Accept": accept, "Content-Type": content_type}
        request = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310
        try:
            with urllib.request.urlopen(request, context=self.ssl) as response:  # noqa: S310
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers, exc.read()

    def send(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        body: Any = None,
        content_type: str = "application/json",
    ) -> tuple[int, dict[str, Any], list[str]]:
        code, head, raw = self.request(method, path, query, body, content_type)
        return code, json.loads(raw or b"{}"), head.get_all("Warning") or []


def _lookup(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def record(client: Client) -> list[dict[str, Any]]:
    results = []
    for case in CASES:
        code, body, warnings = client.send(
            case["method"],
            case["path"],
            case["query"],
            case.get("body"),
            case.get("content_type", "application/json"),
        )
        answer: dict[str, Any] = {"code": code, "reason": body.get("reason", "")}
        if body.get("kind") == "Status":
            answer["message"] = body.get("message", "")
        if warnings:
            answer["warnings"] = warnings
        if case["name"] == "version":
            answer["version"] = {k: body[k] for k in ("major", "minor", "gitVersion")}
        if "gist" in case and case["gist"] not in answer.get("message", ""):
            print(f"{case['name']}: gist not in {answer}", file=sys.stderr)
        if "warning" in case and not any(case["warning"] in w for w in warnings):
            print(f"{case['name']}: warning not in {warnings}", file=sys.stderr)
        if "absent" in case and _lookup(body, case["absent"]) is not None:
            print(f"{case['name']}: {case['absent']} is stored", file=sys.stderr)
        results.append({**case, "answer": answer})
    return results


def _settle(check: Any, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.5)


def _must(answer: tuple[int, dict[str, Any], list[str]], what: str) -> dict[str, Any]:
    code, body, _ = answer
    if code >= 300:
        raise SystemExit(f"{what}: {code} {body.get('message')}")
    return body


MERGE = "application/merge-patch+json"


def make_table_objects(client: Client) -> None:
    """Make `TABLE_OBJECTS` and `TABLE_QUOTA`, then delete the two meant to stay terminating."""
    account = f"/api/v1/namespaces/{NS}/serviceaccounts/default"  # pods need it (admission)
    _settle(lambda: client.send("GET", account, {})[0] == 200, "the default service account")
    uids: dict[str, str] = {}
    for obj, status in TABLE_OBJECTS:
        name, path = obj["metadata"]["name"], _OBJECT_PATHS[obj["kind"]]
        created = _must(client.send("POST", path, {}, obj), f"create {name}")
        uids[name] = created["metadata"]["uid"]
        if obj["kind"] == "Node":  # no node-lifecycle controller lifts the not-ready taint
            _must(client.send("PATCH", f"{path}/{name}", {}, {"spec": {"taints": []}}, MERGE), name)
        if status is not None:
            body = {"status": status}
            _must(client.send("PATCH", f"{path}/{name}/status", {}, body, MERGE), f"{name} status")
    claims = _OBJECT_PATHS["ResourceClaim"]
    running = {
        "resource": "pods",
        "name": "emu-contract-running",
        "uid": uids["emu-contract-running"],
    }
    for name, status in (
        ("emu-contract-allocated", {"allocation": _allocation("gpu-0")}),
        ("emu-contract-reserved", {"allocation": _allocation("gpu-1"), "reservedFor": [running]}),
    ):
        body = {"status": status}
        _must(client.send("PATCH", f"{claims}/{name}/status", {}, body, MERGE), f"{name} status")
    quotas = _OBJECT_PATHS["ResourceQuota"]
    _must(client.send("POST", quotas, {}, TABLE_QUOTA), "create the quota")

    def quota_counted() -> bool:
        status = client.send("GET", f"{quotas}/emu-contract-quota", {})[1].get("status") or {}
        return set(status.get("used") or {}) == set(TABLE_QUOTA["spec"]["hard"])

    _settle(quota_counted, "the quota controller")
    _must(client.send("DELETE", f"{PODS}/emu-contract-terminating", {}), "delete a bound pod")
    _must(client.send("DELETE", f"{claims}/emu-contract-deleting", {}), "delete a held claim")

    def scheduler_saw_it() -> bool:
        pod = client.send("GET", f"{PODS}/emu-contract-unschedulable", {})[1]
        return any(
            c.get("type") == "PodScheduled" for c in (pod.get("status") or {}).get("conditions", [])
        )

    _settle(scheduler_saw_it, "the scheduler to give up on the unschedulable pod")
    reserved = client.send("GET", f"{claims}/emu-contract-reserved", {})[1]
    if not (reserved.get("status") or {}).get("reservedFor"):
        raise SystemExit("the resourceclaim controller dropped the reservation")


def _without_managed_fields(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_managed_fields(v) for k, v in value.items() if k != "managedFields"}
    if isinstance(value, list):
        return [_without_managed_fields(v) for v in value]
    return value


def table_objects(client: Client) -> list[dict[str, Any]]:
    """Everything made for the Table cases, as the real server holds it (without
    `managedFields`), in an order the emulator can load."""
    objects = []
    for kind, path in _OBJECT_PATHS.items():
        query = {"fieldSelector": f"metadata.name={NS}"} if kind == "Namespace" else TABLE_SELECTOR
        listed = _must(client.send("GET", path, query), f"list {kind}")
        for item in listed["items"]:
            item = {"apiVersion": listed["apiVersion"], "kind": kind, **item}
            objects.append(_without_managed_fields(item))
    return objects


def record_tables(client: Client) -> list[dict[str, Any]]:
    results = []
    for case in TABLE_CASES:
        code, head, raw = client.request(
            case["method"], case["path"], case["query"], case.get("body"), accept=case["accept"]
        )
        answer: dict[str, Any] = {"code": code, "contentType": head.get("Content-Type", "")}
        if case["query"].get("watch"):
            events = [json.loads(line) for line in raw.splitlines() if line.strip()]
            answer["events"] = _without_managed_fields(events)
        else:
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
            if isinstance(body, dict) and body.get("kind") == "Status":
                answer |= {"reason": body.get("reason", ""), "message": body.get("message", "")}
            answer["body"] = _without_managed_fields(body)
        results.append({**case, "answer": answer})
    return results


def _path_and_query(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def record_kubectl(kubectl: str, kubeconfig: Path) -> dict[str, Any]:
    """What `kubectl get` sends (its `-v=8` log) and prints, against the real server."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [kubectl, "--kubeconfig", str(kubeconfig), *args]
        return subprocess.run(command, capture_output=True, text=True, check=True)  # noqa: S603

    log = run("get", "resourceclaims", "-n", NS, "-v=8").stderr
    accept = re.findall(r"Accept: (application/json;as=Table[^\s\"]*)", log)
    if accept != [KUBECTL_ACCEPT]:
        print(f"kubectl sent Accept {accept}, not {KUBECTL_ACCEPT}", file=sys.stderr)
    requests = re.findall(r'"Request" verb="GET" url="([^"]+)"', log) or re.findall(
        r"GET (https://\S+)", log
    )
    outputs = [{"args": args, "stdout": run(*args).stdout} for args in KUBECTL_COMMANDS]
    version = json.loads(run("version", "-o", "json").stdout)["clientVersion"]["gitVersion"]
    return {
        "version": version,
        "accept": accept[0] if accept else "",
        "requests": [_path_and_query(url) for url in requests],
        "outputs": outputs,
    }


def cleanup_tables(client: Client) -> None:
    for obj, _ in reversed(TABLE_OBJECTS):
        name, path = obj["metadata"]["name"], _OBJECT_PATHS[obj["kind"]]
        if obj["metadata"].get("finalizers"):
            client.send("PATCH", f"{path}/{name}", {}, {"metadata": {"finalizers": None}}, MERGE)
        query = {"gracePeriodSeconds": "0"} if obj["kind"] == "Pod" else {}
        client.send("DELETE", f"{path}/{name}", query)
    client.send("DELETE", f"{_OBJECT_PATHS['ResourceQuota']}/emu-contract-quota", {})
    client.send("DELETE", f"{_OBJECT_PATHS['ResourceClaimTemplate']}/emu-contract-created", {})


def cleanup(client: Client) -> None:
    cleanup_tables(client)
    for name in ("unknown", "strict", "apply", "deep"):
        client.send("DELETE", f"{SLICES}/emu-contract-{name}", {})
    client.send("DELETE", f"/api/v1/namespaces/{NS}", {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument(
        "--kubectl", default="kubectl", help="the kubectl whose requests and output to record"
    )
    args = parser.parse_args()
    client = Client(args.kubeconfig)
    cleanup(client)
    for obj in SETUP:
        path = "/api/v1/namespaces"
        for _ in range(60):
            code, _, _ = client.send("POST", path, {}, obj)
            if code != 409:  # the previous run's namespace may still be terminating
                break
            time.sleep(1)
    try:
        cases = record(client)
        make_table_objects(client)
        tables = {
            "objects": table_objects(client),
            "cases": record_tables(client),
            "kubectl": record_kubectl(args.kubectl, args.kubeconfig),
        }
    finally:
        cleanup(client)
    version = next(c["answer"]["version"]["gitVersion"] for c in cases if c["name"] == "version")
    contract = {"server": version, "setup": SETUP, "cases": cases, "tables": tables}
    json.dump(contract, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
