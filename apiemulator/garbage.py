"""Ownership and garbage collection: namespaces and nodes the writes imply, and objects whose
owners are gone (a mixin of `Store`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .entries import Entry
from .errors import ApiError
from .history import History
from .resources import Resource, by_kind

__all__ = ["Garbage"]


class Garbage(History):
    """Implied namespaces and nodes, and garbage collection, for `Store`."""

    if TYPE_CHECKING:  # `Store`'s writes

        def create(
            self,
            resource: Resource,
            namespace: str | None,
            body: Any,
            *,
            field_manager: str | None = None,
            operation: str = "Update",
            keep_status: bool = False,
            keep_identity: bool = False,
            admit: bool = True,
        ) -> Entry: ...

        def delete(
            self,
            resource: Resource,
            namespace: str | None,
            name: str,
            preconditions: dict[str, Any] | None = None,
        ) -> tuple[Entry, bool]: ...

    def ensure_namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        resource = by_kind["Namespace"]
        with self.lock:
            if ("", name) not in self.objects[resource]:
                meta: dict[str, Any] = {"name": name}
                if labels:
                    meta["labels"] = dict(labels)
                self.create(resource, None, {"metadata": meta})

    def _ensure_node(self, slice_: dict[str, Any]) -> None:
        node_name = (slice_.get("spec") or {}).get("nodeName")
        resource = by_kind["Node"]
        if not node_name or ("", node_name) in self.objects[resource]:
            return
        meta: dict[str, Any] = {
            "name": node_name,
            "labels": {"kubernetes.io/hostname": node_name, "kubernetes.io/os": "linux"},
        }
        for owner in slice_["metadata"].get("ownerReferences") or []:
            if owner.get("kind") == "Node" and owner.get("name") == node_name and owner.get("uid"):
                meta["uid"] = owner["uid"]
        self.create(resource, None, {"metadata": meta}, keep_identity=True)

    def collect_garbage(self) -> list[tuple[str, str, str]]:
        """One pass of kube-controller-manager's garbage collector, background propagation:
        an object whose every owner is gone is deleted (its finalizers still honoured, so it
        may only get a ``deletionTimestamp``). An owner is gone when no object of its kind,
        in the dependent's namespace (or cluster-scoped), carries its uid: a re-created owner
        of the same name does not adopt the old dependents. Owners of kinds this server does
        not serve (ReplicaSet, DaemonSet, ...) cannot be looked up and count as present.
        Returns ``(kind, namespace, name)`` of what it deleted."""
        deleted: list[tuple[str, str, str]] = []
        with self.lock:
            uids = {
                resource.kind: {
                    (key[0], str(entry.obj["metadata"].get("uid") or ""))
                    for key, entry in objects.items()
                }
                for resource, objects in self.objects.items()
            }
            orphans: list[tuple[Resource, str, str]] = []
            for resource, objects in self.objects.items():
                for (namespace, name), entry in objects.items():
                    meta = entry.obj["metadata"]
                    owners = meta.get("ownerReferences") or []
                    if not owners or meta.get("deletionTimestamp"):
                        continue
                    if not any(self._owner_present(owner, namespace, uids) for owner in owners):
                        orphans.append((resource, namespace, name))
            for resource, namespace, name in orphans:
                try:
                    self.delete(resource, namespace or None, name)
                except ApiError:
                    continue
                deleted.append((resource.kind, namespace, name))
        return deleted

    @staticmethod
    def _owner_present(
        owner: dict[str, Any], namespace: str, uids: dict[str, set[tuple[str, str]]]
    ) -> bool:
        kind = owner.get("kind")
        if not isinstance(kind, str) or kind not in by_kind:
            return True
        scope = namespace if by_kind[kind].namespaced else ""
        return (scope, str(owner.get("uid") or "")) in uids.get(kind, set())
