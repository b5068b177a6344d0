"""The kinds the portal reads or writes, and where the API serves them (pure: no client)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import quote

__all__ = ["KINDS", "Kind", "KindInfo"]


class Kind(StrEnum):
    """The kinds the portal reads or writes, by their plural resource name."""

    DEVICE_CLASSES = "deviceclasses"
    RESOURCE_SLICES = "resourceslices"
    RESOURCE_CLAIMS = "resourceclaims"
    RESOURCE_CLAIM_TEMPLATES = "resourceclaimtemplates"
    NODES = "nodes"
    NAMESPACES = "namespaces"
    PODS = "pods"
    RESOURCE_QUOTAS = "resourcequotas"


@dataclass(frozen=True)
class KindInfo:
    kind: str
    api_version: str
    plural: str
    namespaced: bool
    has_status: bool

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        prefix = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        parts = [prefix]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


_DRA = "resource.k8s.io/v1"
KINDS: dict[Kind, KindInfo] = {
    Kind.DEVICE_CLASSES: KindInfo("DeviceClass", _DRA, "deviceclasses", False, False),
    Kind.RESOURCE_SLICES: KindInfo("ResourceSlice", _DRA, "resourceslices", False, False),
    Kind.RESOURCE_CLAIMS: KindInfo("ResourceClaim", _DRA, "resourceclaims", True, True),
    Kind.RESOURCE_CLAIM_TEMPLATES: KindInfo(
        "ResourceClaimTemplate", _DRA, "resourceclaimtemplates", True, False
    ),
    Kind.NODES: KindInfo("Node", "v1", "nodes", False, True),
    Kind.NAMESPACES: KindInfo("Namespace", "v1", "namespaces", False, True),
    Kind.PODS: KindInfo("Pod", "v1", "pods", True, True),
    Kind.RESOURCE_QUOTAS: KindInfo("ResourceQuota", "v1", "resourcequotas", True, True),
}
