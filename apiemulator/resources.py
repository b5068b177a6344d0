"""The kinds the emulator serves and the discovery documents that describe them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["RESOURCES", "Resource", "api_group", "api_group_list", "api_resource_list", "by_kind"]

_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True)
class Resource:
    """One served kind: where it lives in the URL space and how writes treat it."""

    plural: str
    singular: str
    kind: str
    group: str  # "" for the core group
    version: str
    namespaced: bool
    status_subresource: bool = False
    reset_status_on_create: bool = False  # the real strategy drops .status on create
    binding_subresource: bool = False  # pods/binding: POST a Binding to assign a node
    immutable_spec: bool = False
    # A delete answers with the deleted object, not a Status (the registry's
    # ``ReturnDeletedObject``: every resource.k8s.io kind).
    return_deleted_object: bool = False
    # Spec fields an update may not change, as the real validation refuses them (a slice's
    # driver and node: ``ValidateResourceSliceUpdate``).
    immutable_fields: tuple[str, ...] = ()
    field_selectors: tuple[str, ...] = ()
    short_names: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def field_selector_error(self, field: str) -> str | None:
        """None when `field` may be selected on, else kube-apiserver's 400 message for it."""
        if field == "metadata.name" or (field == "metadata.namespace" and self.namespaced):
            return None
        if field in self.field_selectors:
            return None
        if not self.field_selectors:  # no field selectors beyond the object meta ones
            return (
                f'"{field}" is not a known field selector: only "metadata.name", '
                '"metadata.namespace"'
            )
        if self.group:
            return f"field label not supported for {self.api_version}, Kind={self.kind}: {field}"
        return f"field label not supported: {field}"


_RESOURCE_K8S = "resource.k8s.io"

RESOURCES: dict[tuple[str, str], Resource] = {
    (r.group, r.plural): r
    for r in (
        Resource(
            "deviceclasses",
            "deviceclass",
            "DeviceClass",
            _RESOURCE_K8S,
            "v1",
            False,
            return_deleted_object=True,
        ),
        Resource(
            "resourceslices",
            "resourceslice",
            "ResourceSlice",
            _RESOURCE_K8S,
            "v1",
            False,
            field_selectors=("spec.nodeName", "spec.driver"),
            immutable_fields=("nodeName", "driver"),
            return_deleted_object=True,
        ),
        Resource(
            "resourceclaims",
            "resourceclaim",
            "ResourceClaim",
            _RESOURCE_K8S,
            "v1",
            True,
            status_subresource=True,
            reset_status_on_create=True,
            immutable_spec=True,
            return_deleted_object=True,
        ),
        Resource(
            "resourceclaimtemplates",
            "resourceclaimtemplate",
            "ResourceClaimTemplate",
            _RESOURCE_K8S,
            "v1",
            True,
            return_deleted_object=True,
        ),
        Resource(
            "namespaces",
            "namespace",
            "Namespace",
            "",
            "v1",
            False,
            status_subresource=True,
            field_selectors=("status.phase",),
            short_names=("ns",),
        ),
        Resource(
            "nodes",
            "node",
            "Node",
            "",
            "v1",
            False,
            status_subresource=True,
            field_selectors=("spec.unschedulable",),
            short_names=("no",),
        ),
        Resource(
            "pods",
            "pod",
            "Pod",
            "",
            "v1",
            True,
            status_subresource=True,
            reset_status_on_create=True,
            binding_subresource=True,
            field_selectors=(
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.nominatedNodeName",
            ),
            short_names=("po",),
        ),
        Resource(
            "resourcequotas",
            "resourcequota",
            "ResourceQuota",
            "",
            "v1",
            True,
            status_subresource=True,
            reset_status_on_create=True,
            short_names=("quota",),
        ),
    )
}

by_kind: dict[str, Resource] = {r.kind: r for r in RESOURCES.values()}


def api_resource_list(group: str, version: str) -> dict[str, Any] | None:
    """The `APIResourceList` for one group version, or None if it is not served."""
    served = [r for r in RESOURCES.values() if r.group == group and r.version == version]
    if not served:
        return None
    items: list[dict[str, Any]] = []
    for r in served:
        entry: dict[str, Any] = {
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": _VERBS,
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        items.append(entry)
        if r.status_subresource:
            items.append(
                {
                    "name": f"{r.plural}/status",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        if r.binding_subresource:
            items.append(
                {
                    "name": f"{r.plural}/binding",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": "Binding",
                    "verbs": ["create"],
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": items,
    }


def api_group(group: str) -> dict[str, Any] | None:
    versions = sorted({r.version for r in RESOURCES.values() if r.group == group})
    if not group or not versions:
        return None
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": gvs,
        "preferredVersion": gvs[0],
    }


def api_group_list() -> dict[str, Any]:
    groups = sorted({r.group for r in RESOURCES.values() if r.group})
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [g for g in (api_group(name) for name in groups) if g is not None],
    }
