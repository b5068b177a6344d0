"""Devices of the list and the export rendered from ``.values()`` rows.

``DeviceSerializer`` stays the representation's definition (and the schema's); this renders
exactly what it renders (``tests/devices/test_device_api_rows.py`` compares them on every
fixture device) without its per-field, per-row machinery, which cost five times the SQL of a
page of 100 devices at 40,000 devices.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, cast
from urllib.parse import quote

import msgspec
from django.contrib.auth.models import AnonymousUser, User
from django.db import connections
from django.db.models import CharField, Model, OuterRef, QuerySet, Subquery, TextField, Value
from django.db.models.functions import Cast, Concat
from django.urls import reverse
from django.utils.http import RFC3986_SUBDELIMS
from rest_framework.request import Request

from devices.models import Device, NamespacedQuerySet, ResourceSlice

__all__ = ["DeviceRows"]

# What ``reverse()`` leaves unquoted in a path argument (django.urls.resolvers).
PATH_SAFE = RFC3986_SUBDELIMS + "/~:@"
# Keys made of these alone (nearly all: Kubernetes names) are their own quoted form.
UNQUOTED = re.compile(r"[A-Za-z0-9_.\-~!$&'()*+,;=/:@]*")


def _link_maker(request: Request, view_name: str, sample_key: str) -> Any:
    """``link(key)``: the absolute URL of ``view_name``'s object ``key``, as
    ``request.build_absolute_uri(reverse(view_name, kwargs={"key": key}))`` spells it, with
    one ``reverse()`` per page instead of one per row."""
    sample = reverse(view_name, kwargs={"key": sample_key})
    assert sample.endswith(f"/{sample_key}/")
    prefix = sample.removesuffix(f"{sample_key}/")
    absolute_prefix = request.build_absolute_uri(prefix)

    def link(key: str) -> str:
        path = f"{key}/" if UNQUOTED.fullmatch(key) else quote(f"{key}/", safe=PATH_SAFE)
        # Dot segments ("/./", "/../"), which build_absolute_uri resolves.
        if path.startswith(".") or "/." in path:
            return request.build_absolute_uri(prefix + path)
        return absolute_prefix + path

    return link


def _compact_raw(text: str) -> msgspec.Raw:
    return msgspec.Raw(msgspec.json.format(text, indent=-1))


# A device as the API shows it, written once: ``DeviceSerializer`` lists these fields and
# ``DeviceRows`` (the export, the deep pages) reads and renders the same ones, in this order.
DEVICE_COLUMNS = (
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
)
DEVICE_FLAGS = ("is_tainted", "allow_multiple_allocations")
DEVICE_DOCUMENTS = ("attributes", "capacity", "consumes_counters", "taints")
_DOCUMENT_COLUMNS = tuple((name, f"{name}_json") for name in DEVICE_DOCUMENTS)


class DeviceRows:
    """Renders the rows of ``DeviceRows.select(devices)`` as ``DeviceSerializer`` renders
    devices fetched ``with_holders(user)``: holders in claims ``user`` may not see are
    anonymous. Two queries per call to ``render`` whatever the number of rows (allocation
    results, the claims among theirs that ``user`` may see)."""

    columns = ("pk", "driver", "pool_name", "name", *DEVICE_COLUMNS, *DEVICE_FLAGS)
    # Read as text and decoded with msgspec: JSONField's json.loads of four documents per
    # device was the export's largest cost.
    json_columns = DEVICE_DOCUMENTS

    @classmethod
    def select(cls, devices: QuerySet[Device]) -> QuerySet[Any]:
        """``devices`` as the rows ``render`` takes (its ordering kept)."""
        return devices.values(
            *cls.columns,
            # A subquery rather than a join: counting the list and skipping its rows (deep
            # offsets) then read devices alone.
            resource_slice_name=Subquery(
                ResourceSlice.objects.filter(pk=OuterRef("resource_slice_id"))
                .order_by()
                .values("name")
            ),
            **{f"{name}_json": Cast(name, output_field=TextField()) for name in cls.json_columns},
        )

    # The claim models are reached through the relation: this app does not import claims.
    results_model = Device.allocations.rel.related_model
    # A foreign key's related model, never None; its manager (its only one) makes
    # NamespacedQuerySets.
    claims_model = cast("type[Model]", results_model._meta.get_field("claim").related_model)

    def __init__(
        self,
        request: Request,
        user: User | AnonymousUser,
        *,
        every_visible_claim: bool = False,
        raw_json: bool = False,
    ) -> None:
        """``every_visible_claim``: read the names of every claim ``user`` may see once, here,
        rather than those of each ``render``'s holders (for exports, rendered chunk by chunk:
        memory grows with the claims the user sees, not with the devices).

        ``raw_json``: on PostgreSQL, the JSON columns as ``msgspec.Raw`` (only msgspec
        encodes them): the database's text made compact, with no Python objects built. The
        bytes are json.dumps' for the documents these columns hold (jsonb writes non-ASCII
        as is and escapes what json.dumps escapes); only a fraction would be spelled as
        stored (``2.50``), and DRA attributes, capacities, counters and taints hold none.
        SQLite's text escapes non-ASCII (``\\u00e9``), so there they are decoded."""
        self.user = user
        self.device_link = _link_maker(request, "api:device-detail", "driver/pool/name")
        self.claim_link = _link_maker(request, "api:resourceclaim-detail", "namespace/name")
        self._visible_claims = self._claims_among(None) if every_visible_claim else None
        self._json: Any = (
            _compact_raw
            if raw_json and connections[Device.objects.db].vendor == "postgresql"
            else msgspec.json.decode
        )

    def render(
        self, rows: Iterable[dict[str, Any]], device_ids: QuerySet[Any] | None = None
    ) -> list[dict[str, Any]]:
        """``rows`` as the serializer renders them. ``device_ids`` (a query of the rows' pks)
        replaces the list of their ids in the query of holders: cheaper for long chunks."""
        rows = list(rows)
        holders = self._holders([row["pk"] for row in rows] if device_ids is None else device_ids)
        link = self.device_link
        decode = self._json
        return [
            {
                "url": link(f"{row['driver']}/{row['pool_name']}/{row['name']}"),
                "driver": row["driver"],
                "pool": row["pool_name"],
                "name": row["name"],
                "resource_slice": row["resource_slice_name"],
                **{column: row[column] for column in DEVICE_COLUMNS},
                "held_by": holders[row["pk"], False],
                "observed_by": holders[row["pk"], True],
                **{flag: row[flag] for flag in DEVICE_FLAGS},
                **{name: decode(row[column]) for name, column in _DOCUMENT_COLUMNS},
            }
            for row in rows
        ]

    def _holders(
        self, device_ids: list[int] | QuerySet[Any]
    ) -> defaultdict[tuple[int, bool], list[Any]]:
        """``{(device id, admin_access): [holder, ...]}`` in the serializer's order."""
        found: defaultdict[tuple[int, bool], list[Any]] = defaultdict(list)
        if isinstance(device_ids, list) and not device_ids:
            return found
        results = list(
            self.results_model._default_manager.filter(device_id__in=device_ids)
            .order_by("admin_access", "pk")
            .values_list("device_id", "admin_access", "claim_id", "request", "share_id")
        )
        claims = self._visible_claims
        if claims is None:
            claims = self._claims_among({claim_id for _, _, claim_id, _, _ in results})
        for device_id, admin_access, claim_id, request, share_id in results:
            claim = claims.get(claim_id)
            found[device_id, admin_access].append(
                {"claim": None, "url": None, "request": None, "share_id": share_id}
                if claim is None
                else {"claim": claim[0], "url": claim[1], "request": request, "share_id": share_id}
            )
        return found

    def _claims_among(self, claim_ids: Iterable[int] | None) -> dict[int, tuple[str, str]]:
        """``{pk: ("namespace/name", url)}`` of the claims among ``claim_ids`` that the user may
        see (``visible_to``): the names of the others are never read."""
        gate = cast(NamespacedQuerySet, self.claims_model._default_manager.get_queryset())
        claims = gate.visible_to(self.user)
        if claim_ids is not None:
            claims = claims.filter(pk__in=claim_ids)
        link = self.claim_link
        return {
            pk: (key, link(key))
            for pk, key in claims.order_by().values_list(
                "pk", Concat("namespace", Value("/"), "name", output_field=CharField())
            )
        }
