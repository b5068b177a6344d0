"""Devices of the list and the export rendered from ``.values()`` rows.

``DeviceSerializer`` stays the representation's definition (and the schema's); this renders
exactly what it renders (``tests/devices/test_device_api_rows.py`` compares them on every
fixture device) without its per-field, per-row machinery, which cost five times the SQL of a
page of 100 devices at 40,000 devices.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.urls import reverse
from django.utils.http import RFC3986_SUBDELIMS
from rest_framework.request import Request

from devices.models import Device

__all__ = ["DeviceRows"]

# What ``reverse()`` leaves unquoted in a path argument (django.urls.resolvers).
PATH_SAFE = RFC3986_SUBDELIMS + "/~:@"


def _link_maker(request: Request, view_name: str, sample_key: str) -> Any:
    """``link(key)``: the absolute URL of ``view_name``'s object ``key``, as
    ``request.build_absolute_uri(reverse(view_name, kwargs={"key": key}))`` spells it, with
    one ``reverse()`` per page instead of one per row."""
    sample = reverse(view_name, kwargs={"key": sample_key})
    assert sample.endswith(f"/{sample_key}/")
    prefix = sample.removesuffix(f"{sample_key}/")
    absolute_prefix = request.build_absolute_uri(prefix)

    def link(key: str) -> str:
        path = quote(f"{key}/", safe=PATH_SAFE)
        if "/./" in f"/{path}" or "/../" in f"/{path}":  # build_absolute_uri resolves these
            return request.build_absolute_uri(prefix + path)
        return absolute_prefix + path

    return link


class DeviceRows:
    """Renders ``Device.objects.values(*DeviceRows.columns)`` rows as ``DeviceSerializer``
    renders devices fetched ``with_holders(user)``: holders in claims ``user`` may not see are
    anonymous. Two queries per call to ``render`` whatever the number of rows (allocation
    results, the visible claims among theirs)."""

    columns = (
        "pk",
        "driver",
        "pool_name",
        "name",
        "resource_slice__name",
        "node_name",
        "device_type",
        "model_name",
        "uuid",
        "parent_uuid",
        "pci_bus_id",
        "pcie_root",
        "memory_bytes",
        "state",
        "state_reason",
        "is_tainted",
        "allow_multiple_allocations",
        "attributes",
        "capacity",
        "consumes_counters",
        "taints",
    )

    def __init__(self, request: Request, user: AbstractBaseUser | AnonymousUser) -> None:
        self.user = user
        self.device_link = _link_maker(request, "api:device-detail", "driver/pool/name")
        self.claim_link = _link_maker(request, "api:resourceclaim-detail", "namespace/name")

    def render(self, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        rows = list(rows)
        holders = self._holders([row["pk"] for row in rows])
        link = self.device_link
        return [
            {
                "url": link(f"{row['driver']}/{row['pool_name']}/{row['name']}"),
                "driver": row["driver"],
                "pool": row["pool_name"],
                "name": row["name"],
                "resource_slice": row["resource_slice__name"],
                "node_name": row["node_name"],
                "device_type": row["device_type"],
                "model_name": row["model_name"],
                "uuid": row["uuid"],
                "parent_uuid": row["parent_uuid"],
                "pci_bus_id": row["pci_bus_id"],
                "pcie_root": row["pcie_root"],
                "memory_bytes": row["memory_bytes"],
                "state": row["state"],
                "state_reason": row["state_reason"],
                "held_by": holders[row["pk"], False],
                "observed_by": holders[row["pk"], True],
                "is_tainted": row["is_tainted"],
                "allow_multiple_allocations": row["allow_multiple_allocations"],
                "attributes": row["attributes"],
                "capacity": row["capacity"],
                "consumes_counters": row["consumes_counters"],
                "taints": row["taints"],
            }
            for row in rows
        ]

    def _holders(self, device_ids: list[int]) -> defaultdict[tuple[int, bool], list[Any]]:
        """``{(device id, admin_access): [holder, ...]}`` in the serializer's order."""
        found: defaultdict[tuple[int, bool], list[Any]] = defaultdict(list)
        if not device_ids:
            return found
        # The claim models are reached through the relation: this app does not import claims.
        results_model = Device.allocations.rel.related_model  # type: ignore[attr-defined]
        claims_model = results_model._meta.get_field("claim").related_model
        results = list(
            results_model.objects.filter(device_id__in=device_ids)
            .order_by("admin_access", "pk")
            .values_list("device_id", "admin_access", "claim_id", "request", "share_id")
        )
        visible = dict(
            (pk, f"{namespace}/{name}")
            for pk, namespace, name in claims_model.objects.visible_to(self.user)
            .filter(pk__in={claim_id for _, _, claim_id, _, _ in results})
            .values_list("pk", "namespace", "name")
        )
        for device_id, admin_access, claim_id, request, share_id in results:
            claim = visible.get(claim_id)
            found[device_id, admin_access].append(
                {"claim": None, "url": None, "request": None, "share_id": share_id}
                if claim is None
                else {
                    "claim": claim,
                    "url": self.claim_link(claim),
                    "request": request,
                    "share_id": share_id,
                }
            )
        return found
