"""Put kubectl ``List`` fixtures into any cluster, as a real API server will keep them.

A real server assigns its own uid to every object it creates, so what points at an object by
uid — an ownerReference (a slice's Node, a generated claim's Pod) or a claim's
``status.reservedFor`` — is rewritten to the uid the owner got. Objects go in the order their
references need: namespaces, nodes, device classes, slices, pods, claim templates, claims.
Statuses are written through the status subresource after the object exists (a create drops
them). Server-set metadata (uid, resourceVersion, creationTimestamp, managedFields, ...) is
not sent.

Idempotent: an object that already exists is left as it is (its uid is taken for the
references of what follows) and reported as such, so a second run changes nothing.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kube.client import Cluster
from kube.errors import AlreadyExists, ClusterError
from kube.kinds import Kind

__all__ = ["LOAD_ORDER", "LoadReport", "load_fixtures", "read_fixture_files"]

# Kind name → (cluster kind, whether its status is written after the create).
LOAD_ORDER: dict[str, tuple[Kind, bool]] = {
    "Namespace": (Kind.NAMESPACES, False),
    "Node": (Kind.NODES, True),
    "DeviceClass": (Kind.DEVICE_CLASSES, False),
    "ResourceSlice": (Kind.RESOURCE_SLICES, False),
    "Pod": (Kind.PODS, True),
    "ResourceClaimTemplate": (Kind.RESOURCE_CLAIM_TEMPLATES, False),
    "ResourceClaim": (Kind.RESOURCE_CLAIMS, True),
}
_SERVER_SET = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
# Kinds whose objects a reference names by uid, with the namespace they live in ("" when
# cluster-scoped).
_NAMESPACED = {"Pod", "ResourceClaim", "ResourceClaimTemplate"}


@dataclass
class LoadReport:
    created: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # kinds this loader does not put in
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def read_fixture_files(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Every object of the kubectl ``List`` files (JSON or YAML) under ``paths`` (files, or
    directories read in name order)."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files.extend(
                sorted(p for p in path.iterdir() if p.suffix in (".json", ".yaml", ".yml"))
            )
        else:
            files.append(path)
    objects: list[dict[str, Any]] = []
    for file in files:
        text = file.read_text()
        documents = [json.loads(text)] if file.suffix == ".json" else yaml.safe_load_all(text)
        for document in documents:
            if not isinstance(document, dict):
                continue
            items = document.get("items") if document.get("kind", "").endswith("List") else None
            objects.extend(i for i in (items or [document]) if isinstance(i, dict))
    return objects


def load_fixtures(cluster: Cluster, objects: list[dict[str, Any]]) -> LoadReport:
    """Create ``objects`` in ``cluster`` in dependency order, statuses included."""
    report = LoadReport()
    uids: dict[tuple[str, str, str], str] = {}  # (kind, namespace, name) → uid in the cluster
    by_kind: dict[str, list[dict[str, Any]]] = {kind: [] for kind in LOAD_ORDER}
    for obj in objects:
        kind = str(obj.get("kind") or "")
        if kind in by_kind:
            by_kind[kind].append(obj)
        else:
            report.skipped.append(f"{kind or '?'} {_name(obj)}")
    for kind, (cluster_kind, with_status) in LOAD_ORDER.items():
        for original in by_kind[kind]:
            body = _prepared(original, uids, cluster, report)
            label = f"{kind} {_name(original)}"
            namespace = body["metadata"].get("namespace") if kind in _NAMESPACED else None
            try:
                stored = cluster.create(cluster_kind, body)
                report.created.append(label)
            except AlreadyExists:
                stored = cluster.get(cluster_kind, body["metadata"]["name"], namespace)
                report.existing.append(label)
                uids[_key(kind, stored)] = str(stored["metadata"].get("uid") or "")
                continue
            except ClusterError as error:
                report.problems.append(f"{label}: {error.message}")
                continue
            uids[_key(kind, stored)] = str(stored["metadata"].get("uid") or "")
            status = _status(original, uids, cluster, report)
            if with_status and status:
                try:
                    cluster.patch_status(
                        cluster_kind,
                        body["metadata"]["name"],
                        {"status": status},
                        namespace=namespace,
                    )
                    report.statuses.append(label)
                except ClusterError as error:
                    report.problems.append(f"{label} status: {error.message}")
    return report


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


def _key(kind: str, obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace") or "") if kind in _NAMESPACED else ""
    return (kind, namespace, str(meta.get("name") or ""))


def _uid_of(
    kind: str,
    namespace: str,
    name: str,
    uids: dict[tuple[str, str, str], str],
    cluster: Cluster,
) -> str | None:
    """The uid ``kind`` ``name`` has in the cluster: loaded earlier, or already there."""
    key = (kind, namespace if kind in _NAMESPACED else "", name)
    if key in uids:
        return uids[key]
    if kind not in LOAD_ORDER:
        return None
    found = cluster.find(LOAD_ORDER[kind][0], name, namespace if kind in _NAMESPACED else None)
    if found is None:
        return None
    uids[key] = str(found["metadata"].get("uid") or "")
    return uids[key]


def _prepared(
    original: dict[str, Any],
    uids: dict[tuple[str, str, str], str],
    cluster: Cluster,
    report: LoadReport,
) -> dict[str, Any]:
    body = {k: copy.deepcopy(v) for k, v in original.items() if k != "status"}
    meta = body["metadata"] = dict(body.get("metadata") or {})
    for name in _SERVER_SET:
        meta.pop(name, None)
    namespace = str(meta.get("namespace") or "")
    owners = []
    for owner in meta.get("ownerReferences") or []:
        kind, name = str(owner.get("kind") or ""), str(owner.get("name") or "")
        uid = _uid_of(kind, namespace, name, uids, cluster)
        if uid:
            owners.append({**owner, "uid": uid})
        elif kind in LOAD_ORDER:
            report.problems.append(
                f"{original.get('kind')} {_name(original)}: its owner {kind} {name} is in "
                "neither the fixtures nor the cluster; left out (the garbage collector would "
                "delete the object)"
            )
        else:
            owners.append(owner)  # a kind this loader does not know: kept as written
    if owners:
        meta["ownerReferences"] = owners
    else:
        meta.pop("ownerReferences", None)
    return body


def _status(
    original: dict[str, Any],
    uids: dict[tuple[str, str, str], str],
    cluster: Cluster,
    report: LoadReport,
) -> dict[str, Any]:
    status = copy.deepcopy(original.get("status") or {})
    namespace = str((original.get("metadata") or {}).get("namespace") or "")
    reserved = status.get("reservedFor")
    if isinstance(reserved, list):
        consumers = []
        for consumer in reserved:
            if consumer.get("resource") == "pods" and not consumer.get("apiGroup"):
                uid = _uid_of("Pod", namespace, str(consumer.get("name") or ""), uids, cluster)
                if uid is None:
                    report.problems.append(
                        f"ResourceClaim {_name(original)}: reserved for pod "
                        f"{consumer.get('name')}, which is not there; left out"
                    )
                    continue
                consumer = {**consumer, "uid": uid}
            consumers.append(consumer)
        status["reservedFor"] = consumers
    return status
