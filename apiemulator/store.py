"""Objects, the global resourceVersion, the event log and compaction.

Every write bumps the one global resourceVersion by exactly one and appends exactly one event, so
the event with resourceVersion `rv` sits at `log[rv - first_rv]`. Stored objects are never mutated
in place: each write builds a new `Entry` whose JSON bytes are serialized once and shared by every
list page, GET and watch event that shows it. Objects are kept without `apiVersion`/`kind` (as list
items are); single-object responses splice those two fields in front.

Simplifications (documented in the report): no dry-run; graceful deletion is immediate; finalizers
are honoured minimally (a delete sets `deletionTimestamp`, the object goes once its finalizers are
emptied); server-side apply merges without field-ownership conflicts. ResourceQuota admission
of ResourceClaims and the quota controller's status are in `quota.py` (with what it simplifies).
"""

from __future__ import annotations

import copy
import json
import random
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from .admission import Admission
from .defaults import apply_defaults
from .entries import (
    Entry,
    Event,
    Key,
    ListResult,
    WatchClosed,
    body_without_type,
    content,
    dumps,
    now_rfc3339,
    without_times,
)
from .errors import ApiError
from .garbage import Garbage
from .ownership import (
    FieldPath,
    changed_fields,
    check_apply_conflicts,
    fields_from_v1,
    fields_to_v1,
    leaf_fields,
)
from .patch import PatchError, apply_json_patch, merge_patch, strip_directives
from .quota import invalid_hard
from .resources import RESOURCES, Resource, by_kind

__all__ = ["Entry", "Event", "ListResult", "Store", "WatchClosed", "dumps"]

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"


class Store(Admission, Garbage):
    """Thread-safe storage; every public method takes the lock. Writes are here; reads and
    watches are `History`'s, quota admission `Admission`'s, ownership `Garbage`'s."""

    def __init__(
        self,
        *,
        history_limit: int | None = None,
        require_namespaces: bool = True,
        initial_resource_version: int = 0,
    ):
        """``initial_resource_version``: where this store's history starts, as if everything
        before it had been compacted (a restarted or replaced cluster)."""
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.rv = initial_resource_version
        self.first_rv = initial_resource_version + 1  # resourceVersion of log[0]
        self.compacted_rv = initial_resource_version  # watches/continues from before get 410
        self.log: list[Event] = []
        self.objects: dict[Resource, dict[Key, Entry]] = {r: {} for r in RESOURCES.values()}
        self.history_limit = history_limit
        self.require_namespaces = require_namespaces
        self.closing = False
        self.watch_epoch = 0
        self._snapshots: OrderedDict[tuple[Any, ...], list[Entry]] = OrderedDict()

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
    ) -> Entry:
        """Store a new object. ``admit=False`` (loading) skips quota admission."""
        obj = body_without_type(resource, body, "")
        apply_defaults(resource.kind, obj)
        meta = obj["metadata"]
        if not meta.get("name") and meta.get("generateName"):
            suffix = "".join(random.choices(_SUFFIX_CHARS, k=5))
            meta["name"] = f"{meta['generateName']}{suffix}"
        name = meta.get("name") or ""
        if not name:
            raise ApiError.invalid(resource.kind, "", "metadata.name: Required value: name")
        if len(name) > 253 or not _NAME_RE.match(name):
            raise ApiError.invalid(
                resource.kind,
                name,
                f"metadata.name: Invalid value: {name!r}: a lowercase RFC "
                "1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'",
            )
        with self.lock:
            if resource.namespaced:
                namespace = namespace or meta.get("namespace") or "default"
                if meta.get("namespace", namespace) != namespace:
                    raise ApiError.bad_request(
                        "the namespace of the provided object does not match the namespace sent "
                        "on the request"
                    )
                meta["namespace"] = namespace
                namespaces = self.objects[by_kind["Namespace"]]
                if self.require_namespaces and ("", namespace) not in namespaces:
                    raise ApiError.not_found("namespaces", "", namespace)
            else:
                meta.pop("namespace", None)
            key = (meta.get("namespace", ""), name)
            if key in self.objects[resource]:
                raise ApiError.already_exists(resource.plural, resource.group, name)
            if not keep_identity or not meta.get("uid"):
                meta["uid"] = str(uuid.uuid4())
            if not keep_identity or not meta.get("creationTimestamp"):
                meta["creationTimestamp"] = now_rfc3339()
            if not keep_identity or not meta.get("generation"):
                meta["generation"] = 1
            if not keep_identity:  # a loaded object may be on its way out already
                for field in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                    meta.pop(field, None)
            if resource.reset_status_on_create and not keep_status:
                obj.pop("status", None)
            if resource.kind == "Namespace":
                meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = name
                obj.setdefault("spec", {"finalizers": ["kubernetes"]})
                obj.setdefault("status", {"phase": "Active"})
            elif resource.kind == "Pod":
                obj.setdefault("status", {"phase": "Pending"})
            if resource.kind == "ResourceQuota":
                error = invalid_hard(name, obj)
                if error is not None:
                    raise error
            if field_manager:
                fields = leaf_fields(obj)
                self._record_manager(
                    resource,
                    obj,
                    field_manager,
                    operation,
                    changed=fields,
                    applied=fields if operation == "Apply" else None,
                )
            if resource.kind == "ResourceClaim" and admit:
                self._admit_claim(meta["namespace"], obj)
            entry = Entry.build(resource, obj, self._next_rv())
            self._commit("ADDED", entry, None)
            if resource.kind == "ResourceQuota":
                self._refresh_quotas(meta["namespace"], only=name)
            return entry

    @staticmethod
    def _record_manager(
        resource: Resource,
        obj: dict[str, Any],
        manager: str,
        op: str,
        *,
        changed: set[FieldPath],
        applied: set[FieldPath] | None = None,
    ) -> None:
        """managedFields: the fields `changed` move to (manager, op), leaving the other
        entries; an apply owns exactly the fields it `applied` (lists count as one field)."""
        entries = []
        own: set[FieldPath] = set()
        for f in obj["metadata"].get("managedFields") or []:
            fields = fields_from_v1(f.get("fieldsV1") or {})
            if (f.get("manager"), f.get("operation")) == (manager, op):
                own = fields
                continue
            if fields and not fields - changed:
                continue  # every field it owned was taken over
            entries.append({**f, "fieldsV1": fields_to_v1(fields - changed)} if fields else f)
        entries.append(
            {
                "manager": manager,
                "operation": op,
                "apiVersion": resource.api_version,
                "time": now_rfc3339(),
                "fieldsType": "FieldsV1",
                "fieldsV1": fields_to_v1(applied if applied is not None else own | changed),
            }
        )
        obj["metadata"]["managedFields"] = entries

    def _update(
        self,
        old: Entry,
        new: dict[str, Any],
        *,
        subresource: str | None,
        field_manager: str | None = None,
        operation: str = "Update",
        applied: set[FieldPath] | None = None,
    ) -> Entry:
        """Store `new` in place of `old` (lock held), keeping what the server owns."""
        resource = old.resource
        name = old.key[1]
        if subresource is None:
            apply_defaults(resource.kind, new)
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            raise ApiError.invalid(resource.kind, name, "metadata must be an object")
        if meta.get("name", name) != name:
            raise ApiError.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                f"({name})"
            )
        if meta.get("namespace", old.key[0] or None) != (old.key[0] or None):
            raise ApiError.bad_request("the namespace of the object does not match the URL")
        given_rv = meta.get("resourceVersion")
        if given_rv not in (None, "") and given_rv != str(old.rv):
            raise ApiError.conflict(resource.plural, resource.group, name)
        if resource.kind == "ResourceQuota" and subresource is None:
            error = invalid_hard(name, new)
            if error is not None:
                raise error
        old_obj, old_meta = old.obj, old.obj["metadata"]
        if subresource == "status":
            result = {k: v for k, v in old_obj.items() if k != "status"}
            if "status" in new:
                result["status"] = new["status"]
            result["metadata"] = dict(old_meta)
            if resource.kind == "ResourceClaim":
                _check_allocation_unchanged(name, old_obj, result)
        else:
            result = {k: v for k, v in new.items() if k != "status"}
            if resource.status_subresource:
                if "status" in old_obj:
                    result["status"] = old_obj["status"]
            elif "status" in new:
                result["status"] = new["status"]
            meta = dict(meta)
            for field in ("name", "namespace", "uid", "creationTimestamp", "generation"):
                if field in old_meta:
                    meta[field] = old_meta[field]
                else:
                    meta.pop(field, None)
            for field in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                if field in old_meta:
                    meta[field] = old_meta[field]
            result["metadata"] = meta
            if resource.immutable_spec and result.get("spec") != old_obj.get("spec"):
                raise ApiError.invalid(
                    resource.kind, name, "spec: Invalid value: field is immutable"
                )
            _check_immutable_fields(resource, name, old_obj, result)
            if content(result) != content(old_obj):
                meta["generation"] = int(old_meta.get("generation") or 0) + 1
        result["metadata"]["resourceVersion"] = old_meta.get("resourceVersion")
        if field_manager:
            self._record_manager(
                resource,
                result,
                field_manager,
                operation,
                changed=changed_fields(old_obj, result),
                applied=applied,
            )
        if without_times(result) == without_times(old_obj):
            return old  # a no-op write does not bump the resourceVersion
        if result["metadata"].get("deletionTimestamp") and not result["metadata"].get("finalizers"):
            entry = Entry.build(resource, result, self._next_rv())
            return self._commit("DELETED", entry, old)
        return self._commit("MODIFIED", Entry.build(resource, result, self._next_rv()), old)

    def replace(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> Entry:
        new = body_without_type(resource, body, name)
        with self.lock:
            old = self.get(resource, namespace, name)
            entry = self._update(old, new, subresource=subresource, field_manager=field_manager)
            self._after_quota_write(entry, subresource)
            return entry

    def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        patch_type: str,
        patch: Any,
        *,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
    ) -> tuple[Entry, bool]:
        """Apply one patch; returns the entry and whether it was created (apply only)."""
        with self.lock:
            key = (namespace or "", name)
            old = self.objects[resource].get(key)
            if patch_type == "apply":
                if not field_manager:
                    raise ApiError.bad_request("PATCH requests of type apply need a fieldManager")
                patch = body_without_type(resource, patch, name)
                if patch["metadata"].get("name", name) != name:
                    raise ApiError.bad_request("the name in the body does not match the URL")
                if old is None:
                    if subresource:
                        raise ApiError.not_found(resource.plural, resource.group, name)
                    patch["metadata"]["name"] = name
                    entry = self.create(
                        resource,
                        namespace,
                        patch,
                        field_manager=field_manager,
                        operation="Apply",
                        keep_status=False,
                    )
                    return entry, True
            if old is None:
                raise ApiError.not_found(resource.plural, resource.group, name)
            applied = None
            if patch_type == "apply":
                applied = leaf_fields(patch)
                if not force:
                    check_apply_conflicts(old.obj, patch, applied, field_manager or "")
            current = old.document()
            try:
                if patch_type == "json":
                    new = apply_json_patch(current, patch)
                elif patch_type == "strategic":
                    new = merge_patch(current, strip_directives(patch))
                else:  # merge, apply
                    new = merge_patch(current, patch)
            except PatchError as exc:
                raise ApiError.invalid(resource.kind, name, str(exc)) from exc
            if not isinstance(new, dict):
                raise ApiError.invalid(resource.kind, name, "the patched object is not an object")
            if (
                patch_type != "json"
                and isinstance(patch, dict)
                and "resourceVersion" not in (patch.get("metadata") or {})
            ):
                new.get("metadata", {}).pop("resourceVersion", None)
            new = body_without_type(resource, new, name)
            entry = self._update(
                old,
                new,
                subresource=subresource,
                field_manager=field_manager,
                operation="Apply" if patch_type == "apply" else "Update",
                applied=applied,
            )
            self._after_quota_write(entry, subresource)
            return entry, False

    def bind(self, resource: Resource, namespace: str | None, name: str, body: Any) -> Entry:
        """``POST pods/<name>/binding``: assign an unassigned pod to the Binding's target node.

        As kube-apiserver does: the pod must not have a node yet nor be deleting (409), the
        Binding's uid and resourceVersion are preconditions, its annotations are merged into the
        pod's, and the pod's ``PodScheduled`` condition becomes True.
        """
        if not isinstance(body, dict) or body.get("kind", "Binding") != "Binding":
            raise ApiError.bad_request("the body must be a Binding")
        meta: dict[str, Any] = body["metadata"] if isinstance(body.get("metadata"), dict) else {}
        target: dict[str, Any] = body["target"] if isinstance(body.get("target"), dict) else {}
        if meta.get("name", name) != name:
            raise ApiError.bad_request("name in URL does not match name in Binding object")
        node = target.get("name")
        if not isinstance(node, str) or not node:
            raise ApiError.invalid("Binding", name, "target.name: Required value")
        if target.get("kind", "Node") not in ("", "Node"):
            raise ApiError.invalid(
                "Binding", name, 'target.kind: Unsupported value: must be "Node"'
            )
        with self.lock:
            old = self.get(resource, namespace, name)
            old_meta = old.obj["metadata"]
            if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
                raise ApiError.conflict("pods/binding", "", name)
            if meta.get("resourceVersion") and meta["resourceVersion"] != str(old.rv):
                raise ApiError.conflict("pods/binding", "", name)
            if old_meta.get("deletionTimestamp"):
                raise ApiError(
                    500,
                    "InternalError",
                    f"pod {name} is being deleted, cannot be assigned to a host",
                )
            assigned = (old.obj.get("spec") or {}).get("nodeName")
            if assigned:
                raise ApiError.conflict(
                    "pods/binding", "", name, f"pod {name} is already assigned to node {assigned!r}"
                )
            obj = copy.deepcopy(old.obj)
            obj.setdefault("spec", {})["nodeName"] = node
            if isinstance(meta.get("annotations"), dict) and meta["annotations"]:
                obj["metadata"]["annotations"] = {
                    **(obj["metadata"].get("annotations") or {}),
                    **meta["annotations"],
                }
            status = obj.setdefault("status", {})
            conditions = [
                c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"
            ]
            conditions.append(
                {
                    "type": "PodScheduled",
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": now_rfc3339(),
                }
            )
            status["conditions"] = conditions
            return self._commit("MODIFIED", Entry.build(resource, obj, self._next_rv()), old)

    def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        preconditions: dict[str, Any] | None = None,
    ) -> tuple[Entry, bool]:
        """Delete one object; returns the entry and whether it is gone (False: finalizers)."""
        with self.lock:
            old = self.get(resource, namespace, name)
            meta = old.obj["metadata"]
            pre = preconditions or {}
            if pre.get("uid") and pre["uid"] != meta.get("uid"):
                raise ApiError.conflict(resource.plural, resource.group, name)
            if pre.get("resourceVersion") and pre["resourceVersion"] != str(old.rv):
                raise ApiError.conflict(resource.plural, resource.group, name)
            if resource.kind == "Namespace":
                for other in self.objects.values():
                    for key in [k for k in other if k[0] == name]:
                        self._delete_now(other[key])
            if meta.get("finalizers"):
                if meta.get("deletionTimestamp"):
                    return old, False
                obj = dict(old.obj)
                obj["metadata"] = {
                    **meta,
                    "deletionTimestamp": now_rfc3339(),
                    "deletionGracePeriodSeconds": 0,
                }
                entry = Entry.build(resource, obj, self._next_rv())
                return self._commit("MODIFIED", entry, old), False
            return self._delete_now(old), True

    def _delete_now(self, old: Entry) -> Entry:
        obj = dict(old.obj)
        obj["metadata"] = dict(old.obj["metadata"])
        entry = Entry.build(old.resource, obj, self._next_rv())
        return self._commit("DELETED", entry, old)

    def load(
        self,
        objects: Iterable[dict[str, Any]],
        *,
        create_namespaces: bool = True,
        create_nodes: bool = True,
        copy_objects: bool = True,
    ) -> int:
        """Create or replace objects as given, keeping uid, timestamps and status.

        Missing namespaces of namespaced objects are created; so are the Nodes that
        ResourceSlices name in `spec.nodeName` (with the uid of the slice's Node owner).
        """
        count = 0
        with self.lock:
            for original in objects:
                obj = json.loads(dumps(original)) if copy_objects else original
                kind = obj.get("kind")
                resource = by_kind.get(kind or "")
                if resource is None or obj.get("apiVersion") != resource.api_version:
                    raise ValueError(f"the emulator does not serve {obj.get('apiVersion')} {kind}")
                meta = obj.get("metadata") or {}
                namespace = meta.get("namespace") if resource.namespaced else None
                if resource.namespaced:
                    namespace = namespace or "default"
                    if create_namespaces:
                        self.ensure_namespace(namespace)
                if create_nodes and resource.kind == "ResourceSlice":
                    self._ensure_node(obj)
                existing = self.objects[resource].get((namespace or "", meta.get("name", "")))
                if existing is not None:
                    self._delete_now(existing)
                self.create(
                    resource, namespace, obj, keep_status=True, keep_identity=True, admit=False
                )
                count += 1
        return count


def _check_immutable_fields(
    resource: Resource, name: str, old: dict[str, Any], new: dict[str, Any]
) -> None:
    """Refuses an update that changes one of ``resource.immutable_fields`` of the spec, with
    every offending field named as the real server lists them (in brackets when several)."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    problems = [
        f"spec.{field}: Invalid value: {json.dumps(new_spec.get(field, ''))}: field is immutable"
        for field in resource.immutable_fields
        if new_spec.get(field, "") != old_spec.get(field, "")
    ]
    if problems:
        message = problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]"
        raise ApiError.invalid(resource.kind, name, message)


def _check_allocation_unchanged(name: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    """A claim's ``status.allocation`` may be set and cleared, never changed in place (as the
    real API server validates it: a 1.36 scheduler adding an ``allocationTimestamp`` to an
    allocation written without one is refused with exactly this error)."""
    before = (old.get("status") or {}).get("allocation")
    after = (new.get("status") or {}).get("allocation")
    if before and after and before != after:
        raise ApiError.invalid(
            "ResourceClaim", name, "status.allocation: Invalid value: field is immutable"
        )
