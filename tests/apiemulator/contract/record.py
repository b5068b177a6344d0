"""Record what a real kube-apiserver answers the requests of `test_contract.py`.

    python tests/apiemulator/contract/record.py --kubeconfig /path/to/kubeconfig \
        > tests/apiemulator/contract/real-1.36.3.json

Each case is sent in order (some need the ones before: the apply conflict needs the first
apply). The cluster must be one you may write to: the script creates the namespace
``emu-contract`` and ResourceSlices named ``emu-contract-*``, and deletes them when done. The
output keeps, per case, the request and the status code, ``reason``, message and ``Warning``
headers the server answered; the test replays the requests against the emulator.
"""

from __future__ import annotations

import argparse
import base64
import json
import ssl
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

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

    def send(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        body: Any = None,
        content_type: str = "application/json",
    ) -> tuple[int, dict[str, Any], list[str]]:
        url = self.server + path + (f"?{urlencode(query)}" if query else "")
        data = json.dumps(body).encode() if body is not None else None
        headers = {**self.headers, "Accept": "application/json", "Content-Type": content_type}
        request = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310
        try:
            with urllib.request.urlopen(request, context=self.ssl) as response:  # noqa: S310
                code, raw, head = response.status, response.read(), response.headers
        except urllib.error.HTTPError as exc:
            code, raw, head = exc.code, exc.read(), exc.headers
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


def cleanup(client: Client) -> None:
    for name in ("unknown", "strict", "apply", "deep"):
        client.send("DELETE", f"{SLICES}/emu-contract-{name}", {})
    client.send("DELETE", f"/api/v1/namespaces/{NS}", {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    args = parser.parse_args()
    client = Client(args.kubeconfig)
    cleanup(client)
    for obj in SETUP:
        path = "/api/v1/namespaces"
        for _ in range(30):
            code, _, _ = client.send("POST", path, {}, obj)
            if code != 409:  # the previous run's namespace may still be terminating
                break
            import time

            time.sleep(1)
    try:
        cases = record(client)
    finally:
        cleanup(client)
    version = next(c["answer"]["version"]["gitVersion"] for c in cases if c["name"] == "version")
    json.dump({"server": version, "setup": SETUP, "cases": cases}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
