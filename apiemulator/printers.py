"""What kube-apiserver prints for each kind it serves: the `Table` columns and row cells that
`kubectl get` shows.

A port of the printers the real server runs (``pkg/printers/internalversion/printers.go``,
``AddHandlers``) for the kinds the emulator serves, 1.36.3. The server always renders every
column, the ``-o wide`` ones (``priority`` 1) included; kubectl hides those unless asked. The
column names, types, formats and descriptions are the real server's, checked against a recording
of it by ``tests/apiemulator/test_contract.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dra.quantity import QuantityError, parse_quantity

__all__ = ["PRINTERS", "Printer", "human_duration"]

Row = dict[str, Any]

_NAME = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_AGE = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)

_POD_IP = (
    "podIP address allocated to the pod. Routable at least within the cluster. Empty if not "
    "yet allocated."
)
_POD_NODE = (
    "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate "
    "for scheduling by the scheduler defined in schedulerName. Once this field is set, the "
    "kubelet for this node becomes responsible for the lifecycle of this pod. This field "
    "should not be used to express a desire for the pod to be scheduled on a specific node. "
    "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename"
)
_POD_NOMINATED = (
    "nominatedNodeName is set only when this pod preempts other pods on the node, but it "
    "cannot be scheduled right away as preemption victims receive their graceful termination "
    "periods. This field does not guarantee that the pod will be scheduled on this node. "
    "Scheduler may decide to place the pod elsewhere if other nodes become available sooner. "
    "Scheduler may also decide to give the resources on this node to a higher priority pod "
    "that is created after preemption. As a result, this field may be different than "
    "PodSpec.nodeName when the pod is scheduled."
)
_POD_GATES = (
    "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready "
    "when all its containers are ready AND all conditions specified in the readiness gates "
    'have status equal to "True" More info: '
    "https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates"
)
_NODE_VERSION = "Kubelet Version reported by the node."
_NODE_ADDRESSES = (
    "List of addresses reachable to the node. Queried from cloud provider, if available. More "
    "info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field "
    "is declared as mergeable, but the merge key is not sufficiently unique, which can cause "
    "data corruption when it is merged. Callers should instead use a full-replacement patch. "
    "See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can "
    "change during the lifetime of a Node. However, there are some exceptions where this may "
    "not be possible, such as Pods that inherit a Node's address in its own status or "
    "consumers of the downward API (status.hostIP)."
)
_NODE_OS = "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."
_NODE_KERNEL = "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."
_NODE_RUNTIME = (
    "ContainerRuntime Version reported by the node through runtime remote API (e.g. "
    "containerd://1.4.2)."
)
_SLICE_NODE = (
    "NodeName identifies the node which provides the resources in this pool. A field selector "
    "can be used to list only ResourceSlice objects belonging to a certain node.\n\nThis field "
    "can be used to limit access from nodes to ResourceSlices with the same node name. It also "
    "indicates to autoscalers that adding new nodes of the same type as some old node might "
    "also make new resources available.\n\nExactly one of NodeName, NodeSelector, AllNodes, "
    "and PerDeviceNodeSelection must be set. This field is immutable."
)
_SLICE_DRIVER = (
    "Driver identifies the DRA driver providing the capacity information. A field selector can "
    "be used to list only ResourceSlice objects with a certain driver name.\n\nMust be a DNS "
    "subdomain and should end with a DNS domain owned by the vendor of the driver. It should "
    "use only lower case characters. This field is immutable."
)
_SLICE_POOL = (
    "Name is used to identify the pool. For node-local devices, this is often the node name, "
    "but this is not required.\n\nIt must not be longer than 253 characters and must consist "
    "of one or more DNS sub-domains separated by slashes. This field is immutable."
)


def _column(name: str, description: str, *, fmt: str = "", priority: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "type": "string",
        "format": fmt,
        "description": description,
        "priority": priority,
    }


_NAME_COLUMN = _column("Name", _NAME, fmt="name")
_AGE_COLUMN = _column("Age", _AGE)


@dataclass(frozen=True)
class Printer:
    """One kind's columns and the function that turns an object into a row's cells (every
    column's, wide ones included) and row conditions."""

    columns: tuple[dict[str, Any], ...]
    cells: Callable[[dict[str, Any], datetime], list[Any]]
    conditions: Callable[[dict[str, Any]], list[dict[str, str]]] = lambda obj: []

    def row(self, obj: dict[str, Any], now: datetime) -> Row:
        row: Row = {"cells": self.cells(obj, now)}
        conditions = self.conditions(obj)
        if conditions:
            row["conditions"] = conditions
        return row


# -- time -----------------------------------------------------------------------------------


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``: about two significant figures of an elapsed time."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if days == 0 else f"{years}y{days}d"
    return f"{hours // 24 // 365}y"


def _timestamp(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _since(text: Any, now: datetime) -> str:
    """``translateTimestampSince``: ``<unknown>`` for no time."""
    moment = _timestamp(text)
    if moment is None:
        return "<unknown>"
    return human_duration((now - moment).total_seconds())


def _age(obj: dict[str, Any], now: datetime) -> str:
    return _since(_meta(obj).get("creationTimestamp"), now)


# -- small readers --------------------------------------------------------------------------


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return _dict(obj.get("metadata"))


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    return _dict(obj.get("spec"))


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    return _dict(obj.get("status"))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _name_and_age(obj: dict[str, Any], now: datetime) -> list[Any]:
    return [_text(_meta(obj).get("name")), _age(obj, now)]


# -- pods -----------------------------------------------------------------------------------

_POD_SUCCEEDED = {
    "type": "Completed",
    "status": "True",
    "reason": "Succeeded",
    "message": "The pod has completed successfully.",
}
_POD_FAILED = {
    "type": "Completed",
    "status": "True",
    "reason": "Failed",
    "message": "The pod failed.",
}


def _pod_conditions(pod: dict[str, Any]) -> list[dict[str, str]]:
    phase = _status(pod).get("phase")
    if phase == "Succeeded":
        return [dict(_POD_SUCCEEDED)]
    if phase == "Failed":
        return [dict(_POD_FAILED)]
    return []


def _has_condition(status: dict[str, Any], type_: str) -> bool:
    return any(
        _dict(c).get("type") == type_ and _dict(c).get("status") == "True"
        for c in _list(status.get("conditions"))
    )


def _is_restartable(container: dict[str, Any] | None) -> bool:
    return container is not None and container.get("restartPolicy") == "Always"


class _LastRestart:
    """The latest ``lastState.terminated.finishedAt`` seen among some containers."""

    def __init__(self) -> None:
        self.at: datetime | None = None

    def see(self, container_status: dict[str, Any]) -> None:
        terminated = _dict(_dict(container_status.get("lastState")).get("terminated"))
        if not terminated:
            return
        finished = _timestamp(terminated.get("finishedAt"))
        if finished is not None and (self.at is None or self.at < finished):
            self.at = finished


def _terminated_reason(terminated: dict[str, Any], prefix: str = "") -> str:
    reason = _text(terminated.get("reason"))
    if reason:
        return reason
    signal = _int(terminated.get("signal"))
    if signal:
        return f"{prefix}Signal:{signal}"
    return f"{prefix}ExitCode:{_int(terminated.get('exitCode'))}"


def _pod_cells(pod: dict[str, Any], now: datetime) -> list[Any]:
    """``printPod``: READY, STATUS (the most telling reason), RESTARTS and the wide columns."""
    spec, status, meta = _spec(pod), _status(pod), _meta(pod)
    init_specs = {
        _text(c.get("name")): c for c in (_dict(c) for c in _list(spec.get("initContainers")))
    }
    total = len(_list(spec.get("containers"))) + sum(
        1 for c in init_specs.values() if _is_restartable(c)
    )
    ready = 0
    restarts = 0
    sidecar_restarts = 0
    last_restart, last_sidecar_restart = _LastRestart(), _LastRestart()
    phase = _text(status.get("phase"))
    reason = _text(status.get("reason")) or phase
    for condition in (_dict(c) for c in _list(status.get("conditions"))):
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    initializing = False
    init_count = len(_list(spec.get("initContainers")))
    for index, container in enumerate(_dict(c) for c in _list(status.get("initContainerStatuses"))):
        restarts += _int(container.get("restartCount"))
        last_restart.see(container)
        restartable = _is_restartable(init_specs.get(_text(container.get("name"))))
        if restartable:
            sidecar_restarts += _int(container.get("restartCount"))
            last_sidecar_restart.see(container)
        state = _dict(container.get("state"))
        terminated = _dict(state["terminated"]) if state.get("terminated") is not None else None
        waiting_reason = _text(_dict(state.get("waiting")).get("reason"))
        if terminated is not None and _int(terminated.get("exitCode")) == 0:
            continue
        if restartable and container.get("started") is True:
            if container.get("ready") is True:
                ready += 1
            continue
        if terminated is not None:
            reason = "Init:" + _terminated_reason(terminated)
        elif waiting_reason and waiting_reason != "PodInitializing":
            reason = "Init:" + waiting_reason
        else:
            reason = f"Init:{index}/{init_count}"
        initializing = True
        break

    if not initializing or _has_condition(status, "Initialized"):
        restarts = sidecar_restarts
        last_restart = last_sidecar_restart
        has_running = False
        error_reason = ""
        for container in reversed([_dict(c) for c in _list(status.get("containerStatuses"))]):
            restarts += _int(container.get("restartCount"))
            last_restart.see(container)
            state = _dict(container.get("state"))
            waiting_reason = _text(_dict(state.get("waiting")).get("reason"))
            if waiting_reason:
                reason = waiting_reason
            elif state.get("terminated") is not None:
                terminated = _dict(state["terminated"])
                reason = _terminated_reason(terminated)
                if _int(terminated.get("exitCode")) != 0:
                    error_reason = reason
            elif container.get("ready") is True and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed":
            if has_running and _has_condition(status, "Ready"):
                reason = "Running"
            elif error_reason:
                reason = error_reason
            elif has_running:
                reason = "NotReady"

    if meta.get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"

    restarts_text = str(restarts)
    if restarts and last_restart.at is not None:
        elapsed = human_duration((now - last_restart.at).total_seconds())
        restarts_text = f"{restarts} ({elapsed} ago)"

    pod_ips = [_dict(ip) for ip in _list(status.get("podIPs"))]
    gates = [_dict(g) for g in _list(spec.get("readinessGates"))]
    readiness_gates = "<none>"
    if gates:
        true_gates = 0
        for gate in gates:
            for condition in (_dict(c) for c in _list(status.get("conditions"))):
                if condition.get("type") == gate.get("conditionType"):
                    true_gates += condition.get("status") == "True"
                    break
        readiness_gates = f"{true_gates}/{len(gates)}"
    return [
        _text(meta.get("name")),
        f"{ready}/{total}",
        reason,
        restarts_text,
        _age(pod, now),
        (_text(pod_ips[0].get("ip")) if pod_ips else "") or "<none>",
        _text(spec.get("nodeName")) or "<none>",
        _text(status.get("nominatedNodeName")) or "<none>",
        readiness_gates,
    ]


# -- nodes ----------------------------------------------------------------------------------

_ROLE_PREFIX = "node-role.kubernetes.io/"
_ROLE_LABEL = "kubernetes.io/role"


def _node_roles(labels: dict[str, Any]) -> str:
    roles = set()
    for key, value in labels.items():
        if key.startswith(_ROLE_PREFIX) and key[len(_ROLE_PREFIX) :]:
            roles.add(key[len(_ROLE_PREFIX) :])
        elif key == _ROLE_LABEL and value:
            roles.add(str(value))
    return ",".join(sorted(roles)) or "<none>"


def _node_address(status: dict[str, Any], type_: str) -> str:
    for address in (_dict(a) for a in _list(status.get("addresses"))):
        if address.get("type") == type_:
            return _text(address.get("address"))
    return "<none>"


def _node_cells(node: dict[str, Any], now: datetime) -> list[Any]:
    """``printNode``: STATUS from the Ready condition (and cordoning), ROLES from labels."""
    meta, spec, status = _meta(node), _spec(node), _status(node)
    state = []
    for condition in (_dict(c) for c in _list(status.get("conditions"))):
        if condition.get("type") == "Ready":
            state = ["Ready" if condition.get("status") == "True" else "NotReady"]
    if not state:
        state = ["Unknown"]
    if spec.get("unschedulable") is True:
        state.append("SchedulingDisabled")
    info = _dict(status.get("nodeInfo"))
    kernel = _text(info.get("kernelVersion")) or "<unknown>"
    if _text(info.get("architecture")):
        kernel += f" ({info['architecture']})"
    return [
        _text(meta.get("name")),
        ",".join(state),
        _node_roles(_dict(meta.get("labels"))),
        _age(node, now),
        _text(info.get("kubeletVersion")),
        _node_address(status, "InternalIP"),
        _node_address(status, "ExternalIP"),
        _text(info.get("osImage")) or "<unknown>",
        kernel,
        _text(info.get("containerRuntimeVersion")) or "<unknown>",
    ]


# -- the rest -------------------------------------------------------------------------------


def _namespace_cells(namespace: dict[str, Any], now: datetime) -> list[Any]:
    return [
        _text(_meta(namespace).get("name")),
        _text(_status(namespace).get("phase")),
        _age(namespace, now),
    ]


def _canonical(quantity: Any) -> str:
    try:
        return str(parse_quantity(str(quantity)))
    except QuantityError:
        return str(quantity)


def _quota_cells(quota: dict[str, Any], now: datetime) -> list[Any]:
    """``printResourceQuota``: ``used/hard`` of every resource in ``status.hard``, the
    ``limits.*`` ones in LIMIT, the others in REQUEST."""
    status = _status(quota)
    hard, used = _dict(status.get("hard")), _dict(status.get("used"))
    request: list[str] = []
    limit: list[str] = []
    for resource in sorted(hard):
        column = limit if resource.split(".")[0] == "limits" and "." in resource else request
        used_now, limited = _canonical(used.get(resource, "0")), _canonical(hard[resource])
        column.append(f"{resource}: {used_now}/{limited}")
    return [_text(_meta(quota).get("name")), ", ".join(request), ", ".join(limit), _age(quota, now)]


def _claim_state(claim: dict[str, Any]) -> str:
    """``resourceClaimState``: deleted, pending, allocated, reserved, comma-separated."""
    status = _status(claim)
    deleted = bool(_meta(claim).get("deletionTimestamp"))
    states = ["deleted"] if deleted else []
    if status.get("allocation") is None:
        if not deleted:
            states.append("pending")
    else:
        states.append("allocated")
        if _list(status.get("reservedFor")):
            states.append("reserved")
    return ",".join(states)


def _claim_cells(claim: dict[str, Any], now: datetime) -> list[Any]:
    return [_text(_meta(claim).get("name")), _claim_state(claim), _age(claim, now)]


def _slice_cells(slice_: dict[str, Any], now: datetime) -> list[Any]:
    spec = _spec(slice_)
    return [
        _text(_meta(slice_).get("name")),
        _text(spec.get("nodeName")),
        _text(spec.get("driver")),
        _text(_dict(spec.get("pool")).get("name")),
        _age(slice_, now),
    ]


# -- the columns, as the real server describes them -----------------------------------------

PRINTERS: dict[str, Printer] = {
    "Pod": Printer(
        (
            _NAME_COLUMN,
            _column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
            _column("Status", "The aggregate status of the containers in this pod."),
            _column(
                "Restarts",
                "The number of times the containers in this pod have been restarted and when "
                "the last container in this pod has restarted.",
            ),
            _AGE_COLUMN,
            _column("IP", _POD_IP, priority=1),
            _column("Node", _POD_NODE, priority=1),
            _column("Nominated Node", _POD_NOMINATED, priority=1),
            _column("Readiness Gates", _POD_GATES, priority=1),
        ),
        _pod_cells,
        _pod_conditions,
    ),
    "Node": Printer(
        (
            _NAME_COLUMN,
            _column("Status", "The status of the node"),
            _column("Roles", "The roles of the node"),
            _AGE_COLUMN,
            _column("Version", _NODE_VERSION),
            _column("Internal-IP", _NODE_ADDRESSES, priority=1),
            _column("External-IP", _NODE_ADDRESSES, priority=1),
            _column("OS-Image", _NODE_OS, priority=1),
            _column("Kernel-Version", _NODE_KERNEL, priority=1),
            _column("Container-Runtime", _NODE_RUNTIME, priority=1),
        ),
        _node_cells,
    ),
    "Namespace": Printer(
        (_NAME_COLUMN, _column("Status", "The status of the namespace"), _AGE_COLUMN),
        _namespace_cells,
    ),
    "ResourceQuota": Printer(
        (
            _NAME_COLUMN,
            _column(
                "Request",
                "Request represents a minimum amount of cpu/memory that a container may consume.",
            ),
            _column(
                "Limit",
                "Limits control the maximum amount of cpu/memory that a container may use "
                "independent of contention on the node.",
            ),
            _AGE_COLUMN,
        ),
        _quota_cells,
    ),
    "DeviceClass": Printer((_NAME_COLUMN, _AGE_COLUMN), _name_and_age),
    "ResourceClaim": Printer(
        (
            _NAME_COLUMN,
            _column(
                "State", "A summary of the current state (allocated, pending, reserved, etc.)."
            ),
            _AGE_COLUMN,
        ),
        _claim_cells,
    ),
    "ResourceClaimTemplate": Printer((_NAME_COLUMN, _AGE_COLUMN), _name_and_age),
    "ResourceSlice": Printer(
        (
            _NAME_COLUMN,
            _column("Node", _SLICE_NODE),
            _column("Driver", _SLICE_DRIVER),
            _column("Pool", _SLICE_POOL),
            _AGE_COLUMN,
        ),
        _slice_cells,
    ),
}
