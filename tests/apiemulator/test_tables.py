"""`kubectl get` asks for a `meta.k8s.io` Table; the emulator answers with each kind's printer
columns and cells as kube-apiserver does (what a real 1.36.3 answered is pinned in
`test_contract.py`; these cover the rules around it)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apiemulator import Emulator
from apiemulator.printers import human_duration

TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"
KUBECTL = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims"
PODS = "/api/v1/namespaces/team-a/pods"


def get(
    emulator: Emulator, path: str, accept: str = TABLE, method: str = "GET", body: Any = None
) -> tuple[int, Any]:
    request = urllib.request.Request(
        emulator.url + path,
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Accept": accept, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def ago(**delta: float) -> str:
    return (datetime.now(UTC) - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def claim(name: str, status: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "team-a", **meta},
        "spec": {"devices": {"requests": [request]}},
        "status": status or {},
    }


ALLOCATION = {"devices": {"results": []}}


def pod(name: str, status: dict[str, Any], **spec: Any) -> dict[str, Any]:
    containers = spec.pop("containers", [{"name": "app", "image": "app:1"}])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-a", "creationTimestamp": ago(minutes=30)},
        "spec": {"containers": containers, **spec},
        "status": status,
    }


def running(name: str = "app", **extra: Any) -> dict[str, Any]:
    state = {"running": {"startedAt": ago(minutes=20)}}
    return {"name": name, "ready": True, "restartCount": 0, "state": state, **extra}


def columns(table: dict[str, Any]) -> list[str]:
    return [c["name"] for c in table["columnDefinitions"]]


def rows(table: dict[str, Any]) -> dict[str, list[Any]]:
    return {row["cells"][0]: row["cells"] for row in table["rows"]}


def test_it_answers_kubectls_table_request_with_each_claims_state(emulator: Emulator) -> None:
    emulator.load(
        [
            claim("pending", creationTimestamp=ago(minutes=20)),
            claim("allocated", {"allocation": ALLOCATION}),
            claim(
                "reserved",
                {
                    "allocation": ALLOCATION,
                    "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}],
                },
            ),
            claim("deleted", deletionTimestamp=ago(seconds=1), finalizers=["example.com/x"]),
        ]
    )

    code, table = get(emulator, CLAIMS, KUBECTL)

    assert code == 200
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert columns(table) == ["Name", "State", "Age"]
    assert {name: cells[1] for name, cells in rows(table).items()} == {
        "allocated": "allocated",
        "deleted": "deleted",
        "pending": "pending",
        "reserved": "allocated,reserved",
    }
    assert rows(table)["pending"][2] == "20m"


def test_it_sends_the_wide_columns_for_kubectl_to_show_with_o_wide(emulator: Emulator) -> None:
    emulator.load(
        [
            pod(
                "web",
                {
                    "phase": "Running",
                    "podIPs": [{"ip": "10.1.0.7"}],
                    "conditions": [{"type": "example.com/gate", "status": "True"}],
                    "containerStatuses": [running()],
                },
                nodeName="node-1",
                readinessGates=[{"conditionType": "example.com/gate"}],
            ),
            pod("waiting", {"phase": "Pending"}),
        ]
    )

    _, table = get(emulator, PODS)

    wide = [c["name"] for c in table["columnDefinitions"] if c["priority"] == 1]
    assert wide == ["IP", "Node", "Nominated Node", "Readiness Gates"]
    assert rows(table)["web"] == ["web", "1/1", "Running", "0", "30m", "10.1.0.7", "node-1"] + [
        "<none>",
        "1/1",
    ]
    assert (
        rows(table)["waiting"][1:4] + rows(table)["waiting"][5:]
        == ["0/1", "Pending", "0"] + ["<none>"] * 4
    )


@pytest.mark.parametrize(
    ("status", "spec", "ready", "shown", "restarts"),
    [
        pytest.param(
            {
                "phase": "Running",
                "containerStatuses": [
                    running(),
                    running(
                        "sidecar",
                        ready=False,
                        restartCount=4,
                        state={"waiting": {"reason": "CrashLoopBackOff"}},
                        lastState={"terminated": {"exitCode": 1, "finishedAt": "{30m ago}"}},
                    ),
                ],
            },
            {"containers": [{"name": "app"}, {"name": "sidecar"}]},
            "1/2",
            "CrashLoopBackOff",
            "4 (30m ago)",
            id="crash-looping",
        ),
        pytest.param(
            {
                "phase": "Pending",
                "initContainerStatuses": [
                    {
                        "name": "init",
                        "restartCount": 2,
                        "state": {"waiting": {"reason": "ImagePullBackOff"}},
                    }
                ],
            },
            {"initContainers": [{"name": "init"}]},
            "0/1",
            "Init:ImagePullBackOff",
            "2",
            id="init-failing",
        ),
        pytest.param(
            {
                "phase": "Running",
                "initContainerStatuses": [running("proxy", started=True)],
                "containerStatuses": [running()],
            },
            {"initContainers": [{"name": "proxy", "restartPolicy": "Always"}]},
            "2/2",
            "Running",
            "0",
            id="sidecar",
        ),
        pytest.param(
            {
                "phase": "Running",
                "containerStatuses": [
                    running(),
                    {
                        "name": "job",
                        "restartCount": 0,
                        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
                    },
                ],
            },
            {"containers": [{"name": "job"}, {"name": "app"}]},
            "1/2",
            "NotReady",
            "0",
            id="one-done-one-running-not-ready",
        ),
        pytest.param(
            {
                "phase": "Failed",
                "containerStatuses": [
                    {"name": "app", "state": {"terminated": {"exitCode": 137, "signal": 9}}}
                ],
            },
            {},
            "0/1",
            "Signal:9",
            "0",
            id="killed",
        ),
        pytest.param(
            {"phase": "Running", "reason": "NodeLost", "containerStatuses": [running()]},
            {"deletion": True},
            "1/1",
            "Unknown",
            "0",
            id="node-lost",
        ),
        pytest.param(
            {"phase": "Succeeded"},
            {"deletion": True},
            "0/1",
            "Succeeded",
            "0",
            id="done-pods-do-not-say-terminating",
        ),
    ],
)
def test_a_pods_status_column_says_what_kubectl_would(
    emulator: Emulator,
    status: dict[str, Any],
    spec: dict[str, Any],
    ready: str,
    shown: str,
    restarts: str,
) -> None:
    spec = dict(spec)
    deleting = spec.pop("deletion", False)
    obj = pod("p", json.loads(json.dumps(status).replace("{30m ago}", ago(minutes=30))), **spec)
    if deleting:
        obj["metadata"] |= {"deletionTimestamp": ago(seconds=5), "finalizers": ["example.com/x"]}
    emulator.load([obj])

    _, table = get(emulator, f"{PODS}/p")

    assert rows(table)["p"][1:4] == [ready, shown, restarts]


def test_a_finished_pods_row_carries_the_completed_condition(emulator: Emulator) -> None:
    emulator.load([pod("done", {"phase": "Succeeded"}), pod("broken", {"phase": "Failed"})])

    _, table = get(emulator, PODS)

    conditions = {row["cells"][0]: row.get("conditions") for row in table["rows"]}
    assert conditions["done"] == [
        {
            "type": "Completed",
            "status": "True",
            "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }
    ]
    assert conditions["broken"][0]["reason"] == "Failed"


def test_nodes_show_readiness_cordoning_roles_and_system_info(emulator: Emulator) -> None:
    emulator.load(
        [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": "gpu-1",
                    "labels": {"node-role.kubernetes.io/worker": "", "kubernetes.io/role": "gpu"},
                },
                "spec": {"unschedulable": True},
                "status": {
                    "conditions": [{"type": "Ready", "status": "False"}],
                    "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                    "nodeInfo": {"kubeletVersion": "v1.36.3", "architecture": "arm64"},
                },
            },
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"}},
        ]
    )

    _, table = get(emulator, "/api/v1/nodes")

    assert rows(table)["gpu-1"][:3] + rows(table)["gpu-1"][4:] == [
        "gpu-1",
        "NotReady,SchedulingDisabled",
        "gpu,worker",
        "v1.36.3",
        "10.0.0.1",
        "<none>",
        "<unknown>",
        "<unknown> (arm64)",
        "<unknown>",
    ]
    assert rows(table)["bare"][1:3] == ["Unknown", "<none>"]


def test_a_quota_lists_used_and_hard_requests_and_limits_apart(emulator: Emulator) -> None:
    hard = {
        "limits.memory": "1024Mi",
        "requests.cpu": "500m",
        "count/resourceclaims.resource.k8s.io": "10",
    }
    emulator.load(
        [
            claim("a"),
            claim("b"),
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "gpus", "namespace": "team-a"},
                "spec": {"hard": hard},
            },
        ]
    )

    _, table = get(emulator, "/api/v1/namespaces/team-a/resourcequotas/gpus")

    assert columns(table) == ["Name", "Request", "Limit", "Age"]
    assert table["rows"][0]["cells"][1:3] == [
        "count/resourceclaims.resource.k8s.io: 2/10, requests.cpu: 0/500m",
        "limits.memory: 0/1Gi",
    ]


def test_a_row_carries_metadata_by_default_the_object_or_nothing_as_asked(
    emulator: Emulator,
) -> None:
    emulator.load([claim("c", labels={"team": "a"})])

    default = get(emulator, CLAIMS)[1]["rows"][0]["object"]
    whole = get(emulator, f"{CLAIMS}?includeObject=Object")[1]["rows"][0]["object"]
    nothing = get(emulator, f"{CLAIMS}?includeObject=None")[1]["rows"][0]

    assert (default["kind"], default["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
    assert default["metadata"]["labels"] == {"team": "a"}
    assert "spec" not in default
    assert (whole["kind"], whole["apiVersion"]) == ("ResourceClaim", "resource.k8s.io/v1")
    assert whole["spec"]["devices"]["requests"][0]["name"] == "gpu"
    assert nothing["object"] is None


def test_it_refuses_an_include_object_it_does_not_know(emulator: Emulator) -> None:
    emulator.load([claim("c")])

    code, status = get(emulator, f"{CLAIMS}?includeObject=Everything")

    assert (code, status["reason"]) == (400, "BadRequest")
    assert 'includeObject: Invalid value: "Everything"' in status["message"]


def test_a_table_of_one_object_has_its_resource_version_and_a_page_its_continue(
    emulator: Emulator,
) -> None:
    emulator.load([claim("a"), claim("b"), claim("c")])

    one = get(emulator, f"{CLAIMS}/b")[1]
    page = get(emulator, f"{CLAIMS}?limit=2")[1]

    assert [row["cells"][0] for row in one["rows"]] == ["b"]
    assert one["metadata"] == {
        "resourceVersion": one["rows"][0]["object"]["metadata"]["resourceVersion"]
    }
    assert [row["cells"][0] for row in page["rows"]] == ["a", "b"]
    assert page["metadata"]["continue"]
    assert page["metadata"]["remainingItemCount"] == 1


@pytest.mark.parametrize(
    "accept",
    [
        "application/json;as=Table;g=meta.k8s.io;v=v2",
        "application/json;as=Table;g=example.com;v=v1",
        "application/json;as=Table",
        "application/json;as=Chart;g=meta.k8s.io;v=v1",
        "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1",
    ],
)
def test_it_answers_406_to_a_conversion_it_cannot_make(emulator: Emulator, accept: str) -> None:
    code, status = get(emulator, f"{CLAIMS}/missing", accept)

    assert (code, status["reason"]) == (406, "NotAcceptable")  # before looking: not 404
    assert status["message"].startswith("only the following media types are accepted: ")


def test_it_falls_back_to_the_next_clause_of_the_accept_header(emulator: Emulator) -> None:
    emulator.load([claim("c")])

    _, answer = get(emulator, CLAIMS, "application/json;as=Table;g=meta.k8s.io;v=v2,*/*")

    assert answer["kind"] == "ResourceClaimList"


def test_the_older_table_version_is_served_too(emulator: Emulator) -> None:
    emulator.load([claim("c")])

    _, table = get(emulator, CLAIMS, "application/json;as=Table;g=meta.k8s.io;v=v1beta1")

    assert table["apiVersion"] == "meta.k8s.io/v1beta1"
    assert table["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"


def test_a_write_answers_in_the_shape_asked_for_and_a_status_stays_a_status(
    emulator: Emulator,
) -> None:
    emulator.store.ensure_namespace("team-a")
    quota = {"metadata": {"name": "q"}, "spec": {"hard": {"requests.cpu": "1"}}}
    quotas = "/api/v1/namespaces/team-a/resourcequotas"

    created = get(emulator, CLAIMS, TABLE, "POST", claim("c"))
    deleted = get(emulator, f"{CLAIMS}/c", TABLE, "DELETE")
    get(emulator, quotas, TABLE, "POST", quota)
    deleted_quota = get(emulator, f"{quotas}/q", TABLE, "DELETE")

    assert created[0] == 201
    assert created[1]["kind"] == "Table"
    assert rows(created[1])["c"][1] == "pending"
    assert rows(deleted[1])["c"][0] == "c"  # a resource.k8s.io delete answers the object
    assert deleted_quota[1]["kind"] == "Status"


def test_partial_object_metadata_lists_and_objects(emulator: Emulator) -> None:
    emulator.load([claim("c")])
    partial = "application/json;as=PartialObjectMetadata{};g=meta.k8s.io;v=v1"

    listed = get(emulator, CLAIMS, partial.format("List"))[1]
    one = get(emulator, f"{CLAIMS}/c", partial.format(""))[1]
    wrong = get(emulator, CLAIMS, partial.format(""))

    assert listed["kind"] == "PartialObjectMetadataList"
    assert [item["metadata"]["name"] for item in listed["items"]] == ["c"]
    assert (one["kind"], one["metadata"]["name"]) == ("PartialObjectMetadata", "c")
    assert "spec" not in one
    assert wrong[0] == 406
    assert "but the requested object is a list" in wrong[1]["message"]


def test_a_watch_asked_for_as_a_table_sends_the_columns_with_the_first_event_only(
    emulator: Emulator,
) -> None:
    emulator.load([claim("a"), claim("b")])
    request = urllib.request.Request(
        f"{emulator.url}{CLAIMS}?watch=1&timeoutSeconds=1", headers={"Accept": KUBECTL}
    )

    with urllib.request.urlopen(request, timeout=10) as response:
        events = [json.loads(line) for line in response.read().splitlines() if line.strip()]

    assert [event["type"] for event in events] == ["ADDED", "ADDED"]
    assert [event["object"]["kind"] for event in events] == ["Table", "Table"]
    assert columns(events[0]["object"]) == ["Name", "State", "Age"]
    assert events[1]["object"]["columnDefinitions"] is None
    assert [event["object"]["rows"][0]["cells"][:2] for event in events] == [
        ["a", "pending"],
        ["b", "pending"],
    ]


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (59, "59s"),
        (119, "119s"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 60 * 7, "3h7m"),
        (47 * 3600, "47h"),
        (50 * 3600, "2d2h"),
        (9 * 86400, "9d"),
        (800 * 86400, "2y70d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_ages_read_as_kubectl_prints_them(seconds: float, shown: str) -> None:
    assert human_duration(seconds) == shown


def test_discovery_documents_are_never_converted(emulator: Emulator) -> None:
    refused = get(emulator, "/apis/resource.k8s.io/v1", TABLE)
    fallback = get(emulator, "/apis/resource.k8s.io/v1", KUBECTL)

    assert (refused[0], refused[1]["reason"]) == (406, "NotAcceptable")
    assert fallback[1]["kind"] == "APIResourceList"
