"""The ResourceQuota backstop: a Kubernetes ResourceQuota in each namespace of a tenant that
asks for one (``Tenant.resource_quota_backstop``), kept in step with its portal quotas, so
claims made outside the portal (kubectl, operators) are limited by the API server too.

What Kubernetes enforces (``pkg/quota/v1/evaluator/core/resource_claims.go``): per namespace,
``count/resourceclaims.resource.k8s.io`` counts ResourceClaim objects, and
``<class>.deviceclass.resource.k8s.io/devices`` the devices a claim *asks for* of that class, at
creation: an exact count, 32 for ``allocationMode: All`` and, for ``firstAvailable``, the
largest alternative; admin-access requests count too. Device memory cannot be expressed.

The object the portal wants in every namespace of the tenant (:func:`manifest`): named
``dra-portal-quota``, labelled ``app.kubernetes.io/managed-by: dra-portal`` and
``dra-portal.io/tenant: <slug>``, with ``spec.hard`` from :func:`desired_hard`. Only objects
carrying the managed-by label are ever changed or deleted; one of that name without the label
is someone else's and is reported (``foreign``), never overwritten.

A coarse guard, not the quota: the portal's limits are per tenant across its namespaces,
Kubernetes' per namespace, so each namespace gets the tenant's whole limit. Within one
namespace that is never stricter than the portal; across N namespaces the API server allows
up to N times the limit. It can refuse what the portal would accept in two cases only:
``All`` and ``firstAvailable`` requests count their worst case, and admin access counts.

Drift (someone edited the object) is found by :func:`check_backstop` and shown; it is repaired
only on request (:func:`repair_backstop`). A change of the portal's quotas or of the tenant
re-applies the desired object (:func:`sync_backstop`), which also overwrites drift.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.utils import timezone

from dra.quantity import QuantityError, parse_quantity
from kube.client import Cluster
from kube.errors import AlreadyExists, ClusterError, Conflict, NotFound, Unavailable
from kube.kinds import Kind
from mirror.models import BackstopStatus
from portal.cluster import connected
from portal.models import AuditEvent, Tenant
from portal.services.audit import record_event

__all__ = [
    "CLAIM_COUNT",
    "MANAGED_BY",
    "NamespaceCheck",
    "QUOTA_NAME",
    "TENANT_LABEL",
    "check_backstop",
    "check_backstops",
    "desired_hard",
    "differences",
    "manifest",
    "needs_sync",
    "prune_orphans",
    "repair_backstop",
    "sync_backstop",
]

log = logging.getLogger(__name__)

QUOTA_NAME = "dra-portal-quota"
MANAGED_BY = "app.kubernetes.io/managed-by"
PORTAL = "dra-portal"
TENANT_LABEL = "dra-portal.io/tenant"
OWNED_SELECTOR = f"{MANAGED_BY}={PORTAL}"
CLAIM_COUNT = "count/resourceclaims.resource.k8s.io"
PER_CLASS = "{}.deviceclass.resource.k8s.io/devices"
WRITE_ATTEMPTS = 3
State = BackstopStatus.State


@dataclass
class NamespaceCheck:
    """What one namespace holds against what the portal wants."""

    namespace: str
    state: BackstopStatus.State
    desired: dict[str, str]
    live: dict[str, str] | None = None
    differences: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""


def desired_hard(tenant: Tenant) -> dict[str, str]:
    """``spec.hard`` for each of the tenant's namespaces.

    Devices: one entry per quota with ``max_devices``. Claims: Kubernetes counts ResourceClaims
    per namespace, not per class, while the portal limits claims per class; the sum of the
    classes' ``max_claims`` bounds the tenant's claims of all classes together, so it is set when
    every quota has one (one unlimited class makes the count unlimited). Device memory and
    leases have no ResourceQuota equivalent.
    """
    quotas = list(tenant.quotas.order_by("device_class_name"))
    hard = {
        PER_CLASS.format(quota.device_class_name): str(quota.max_devices)
        for quota in quotas
        if quota.max_devices is not None
    }
    if quotas and all(quota.max_claims is not None for quota in quotas):
        hard[CLAIM_COUNT] = str(sum(quota.max_claims or 0 for quota in quotas))
    return hard


def manifest(tenant: Tenant, namespace: str, hard: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": QUOTA_NAME,
            "namespace": namespace,
            "labels": {MANAGED_BY: PORTAL, TENANT_LABEL: tenant.slug},
            "annotations": {
                "dra-portal.io/note": "Kept in step with the tenant's portal quotas; "
                "edits are reported as drift."
            },
        },
        "spec": {"hard": dict(hard)},
    }


def _is_owned(obj: dict[str, Any]) -> bool:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY) == PORTAL


def _same(desired: str, live: Any) -> bool:
    """Quantities compare by value ("8" and "8000m" are the same limit)."""
    try:
        return parse_quantity(desired) == parse_quantity(str(live))
    except QuantityError:
        return desired == str(live)


def differences(desired: dict[str, str], live_obj: dict[str, Any]) -> list[dict[str, Any]]:
    """How the live object's ``spec`` differs from the desired ``hard``, per resource
    (``changed``: another value, ``missing``: a limit removed, ``extra``: one added), and scopes
    someone added (they narrow what the quota applies to)."""
    spec = live_obj.get("spec") or {}
    live = {str(k): str(v) for k, v in (spec.get("hard") or {}).items()}
    found: list[dict[str, Any]] = []
    for key in sorted(set(desired) | set(live)):
        if key not in live:
            found.append(
                {"resource": key, "change": "missing", "desired": desired[key], "live": None}
            )
        elif key not in desired:
            found.append({"resource": key, "change": "extra", "desired": None, "live": live[key]})
        elif not _same(desired[key], live[key]):
            found.append(
                {"resource": key, "change": "changed", "desired": desired[key], "live": live[key]}
            )
    for scope_field in ("scopes", "scopeSelector"):
        if spec.get(scope_field):
            found.append(
                {
                    "resource": f"spec.{scope_field}",
                    "change": "extra",
                    "desired": None,
                    "live": str(spec[scope_field]),
                }
            )
    return found


def _live_hard(obj: dict[str, Any] | None) -> dict[str, str] | None:
    if obj is None:
        return None
    return {str(k): str(v) for k, v in ((obj.get("spec") or {}).get("hard") or {}).items()}


def _foreign(namespace: str, desired: dict[str, str], obj: dict[str, Any]) -> NamespaceCheck:
    return NamespaceCheck(
        namespace,
        State.FOREIGN,
        desired,
        live=_live_hard(obj),
        error=(
            f"A ResourceQuota named {QUOTA_NAME} in {namespace} was not made by the portal "
            f"(no {MANAGED_BY}={PORTAL} label); the portal leaves it alone. Rename or delete it "
            "to let the backstop in."
        ),
    )


def _inspect(cluster: Cluster, namespace: str, desired: dict[str, str]) -> NamespaceCheck:
    """Read one namespace's object and compare. Raises ``Unavailable``."""
    try:
        obj = cluster.get(Kind.RESOURCE_QUOTAS, QUOTA_NAME, namespace)
    except NotFound:
        return NamespaceCheck(namespace, State.MISSING, desired)
    except Unavailable:
        raise
    except ClusterError as error:
        return NamespaceCheck(namespace, State.ERROR, desired, error=str(error))
    if not _is_owned(obj):
        return _foreign(namespace, desired, obj)
    found = differences(desired, obj)
    return NamespaceCheck(
        namespace,
        State.DRIFTED if found else State.IN_SYNC,
        desired,
        live=_live_hard(obj),
        differences=found,
    )


def _apply(
    cluster: Cluster, tenant: Tenant, namespace: str, hard: dict[str, str]
) -> NamespaceCheck:
    """Make the namespace's object the desired one: create it, or replace its labels and spec
    when they differ (optimistic concurrency: a concurrent edit is read again and retried).
    Never writes an object without the managed-by label. Raises ``Unavailable``."""
    body = manifest(tenant, namespace, hard)
    error = ""
    for _ in range(WRITE_ATTEMPTS):
        try:
            try:
                live = cluster.get(Kind.RESOURCE_QUOTAS, QUOTA_NAME, namespace)
            except NotFound:
                created = cluster.create(Kind.RESOURCE_QUOTAS, body)
                return NamespaceCheck(namespace, State.IN_SYNC, hard, live=_live_hard(created))
            if not _is_owned(live):
                return _foreign(namespace, hard, live)
            labels = (live.get("metadata") or {}).get("labels") or {}
            if labels.get(TENANT_LABEL) == tenant.slug and not differences(hard, live):
                return NamespaceCheck(namespace, State.IN_SYNC, hard, live=_live_hard(live))
            live["metadata"]["labels"] = {**labels, **body["metadata"]["labels"]}
            live["spec"] = body["spec"]
            written = cluster.replace(Kind.RESOURCE_QUOTAS, live)
            return NamespaceCheck(namespace, State.IN_SYNC, hard, live=_live_hard(written))
        except (AlreadyExists, Conflict) as race:
            error = str(race)
            continue
        except NotFound as missing:  # the namespace itself is not in the cluster
            return NamespaceCheck(
                namespace, State.ERROR, hard, error=f"Cannot create the ResourceQuota: {missing}"
            )
        except Unavailable:
            raise
        except ClusterError as failure:
            return NamespaceCheck(namespace, State.ERROR, hard, error=str(failure))
    return NamespaceCheck(namespace, State.ERROR, hard, error=f"Kept changing under us: {error}")


def _delete_owned(cluster: Cluster, tenant_slug: str | None, keep: set[str]) -> list[str]:
    """Delete the portal's objects (of ``tenant_slug``, or of every tenant) in namespaces not
    in ``keep``; the uid precondition never deletes an object replaced meanwhile. Raises
    ``Unavailable``."""
    selector = OWNED_SELECTOR + (f",{TENANT_LABEL}={tenant_slug}" if tenant_slug else "")
    items, _ = cluster.list_all(Kind.RESOURCE_QUOTAS, label_selector=selector)
    deleted = []
    for item in items:
        meta = item.get("metadata") or {}
        if meta.get("name") != QUOTA_NAME or meta.get("namespace") in keep:
            continue
        try:
            cluster.delete(Kind.RESOURCE_QUOTAS, QUOTA_NAME, meta["namespace"], uid=meta.get("uid"))
            deleted.append(str(meta["namespace"]))
        except (NotFound, Conflict):
            continue
    return deleted


def _record(tenant: Tenant, results: list[NamespaceCheck]) -> None:
    """Store the results as the tenant's status rows; rows of other namespaces go."""
    now = timezone.now()
    with transaction.atomic():
        for result in results:
            BackstopStatus.objects.update_or_create(
                tenant=tenant,
                namespace=result.namespace,
                defaults={
                    "state": result.state,
                    "desired": result.desired,
                    "live": result.live,
                    "differences": result.differences,
                    "error": result.error[:2000],
                    "checked_at": now,
                },
            )
        BackstopStatus.objects.filter(tenant=tenant).exclude(
            namespace__in=[r.namespace for r in results]
        ).delete()


def _unreachable(tenant: Tenant, namespaces: list[str], error: Exception) -> list[NamespaceCheck]:
    hard = desired_hard(tenant)
    message = f"The API server is unreachable: {error}"
    return [NamespaceCheck(ns, State.ERROR, hard, error=message) for ns in namespaces]


def needs_sync(tenant_id: int) -> bool:
    """Whether a change of this tenant concerns the cluster: its backstop is on, or was and
    may have left objects behind (status rows remain). Tenants that never had it cost nothing."""
    return (
        Tenant.objects.filter(pk=tenant_id, resource_quota_backstop=True).exists()
        or BackstopStatus.objects.filter(tenant_id=tenant_id).exists()
    )


def sync_backstop(tenant_id: int) -> str:
    """Bring the cluster in line with the tenant: the desired object in each of its namespaces
    while the backstop is on; the portal's objects deleted from namespaces it no longer owns,
    or from all when the backstop is off. Idempotent. Raises ``Unavailable`` (after recording
    the error on the status rows) so the task retries."""
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None or not needs_sync(tenant_id):
        return "nothing to do"
    enabled = tenant.resource_quota_backstop
    namespaces = tenant.namespace_names if enabled else []
    try:
        with connected() as cluster:
            hard = desired_hard(tenant)
            results = [_apply(cluster, tenant, ns, hard) for ns in namespaces]
            deleted = _delete_owned(cluster, tenant.slug, set(namespaces))
    except Unavailable as error:
        pending = namespaces or list(
            BackstopStatus.objects.filter(tenant=tenant).values_list("namespace", flat=True)
        )
        _record(tenant, _unreachable(tenant, pending, error))
        raise
    except ClusterError as error:  # misconfigured: recorded, not retried
        _record(
            tenant, [NamespaceCheck(ns, State.ERROR, {}, error=str(error)) for ns in namespaces]
        )
        return f"failed: {error}"
    _record(tenant, results)
    return f"applied {len(results)}, deleted {len(deleted)}"


def check_backstop(tenant: Tenant) -> list[NamespaceCheck]:
    """Compare each namespace's live object with the desired one and record the result (an
    unreachable API server is recorded as an error on every namespace). Changes nothing in the
    cluster; nothing to check (and nothing recorded) while the backstop is off."""
    if not tenant.resource_quota_backstop:
        return []
    namespaces = tenant.namespace_names
    hard = desired_hard(tenant)
    try:
        with connected() as cluster:
            results = [_inspect(cluster, ns, hard) for ns in namespaces]
    except Unavailable as error:
        results = _unreachable(tenant, namespaces, error)
    except ClusterError as error:
        results = [NamespaceCheck(ns, State.ERROR, hard, error=str(error)) for ns in namespaces]
    _record(tenant, results)
    return results


def repair_backstop(*, actor: User | AnonymousUser | None, tenant: Tenant) -> list[NamespaceCheck]:
    """Re-apply the desired object in every namespace of the tenant (never over a foreign
    one), record the outcome and audit the change (``BACKSTOP_REPAIRED``, per namespace the
    ``hard`` before and after) when anything changed. Raises ``Unavailable`` with nothing
    changed when the API server cannot be reached at all; ``ValueError`` while the backstop
    is off."""
    if not tenant.resource_quota_backstop:
        raise ValueError("The ResourceQuota backstop is off for this tenant.")
    namespaces = tenant.namespace_names
    hard = desired_hard(tenant)
    with connected() as cluster:
        before = {ns: _inspect(cluster, ns, hard).live for ns in namespaces}
        results = [_apply(cluster, tenant, ns, hard) for ns in namespaces]
        _delete_owned(cluster, tenant.slug, set(namespaces))
    after = {result.namespace: result.live for result in results}
    with transaction.atomic():
        _record(tenant, results)
        if before != after:
            record_event(
                actor=actor,
                action=AuditEvent.Action.BACKSTOP_REPAIRED,
                obj=tenant,
                tenant=tenant,
                before={"hard": before},
                after={"hard": after},
            )
    return results


def prune_orphans() -> list[str]:
    """Delete the portal's objects that no tenant wants any more: of deleted tenants, of
    tenants whose backstop is off, or in namespaces their tenant no longer owns. Raises
    ``Unavailable``."""
    wanted = {
        (slug, namespace)
        for slug, namespace in Tenant.objects.filter(resource_quota_backstop=True).values_list(
            "slug", "namespaces__name"
        )
        if namespace
    }
    deleted = []
    with connected() as cluster:
        items, _ = cluster.list_all(Kind.RESOURCE_QUOTAS, label_selector=OWNED_SELECTOR)
        for item in items:
            meta = item.get("metadata") or {}
            slug = (meta.get("labels") or {}).get(TENANT_LABEL)
            if meta.get("name") != QUOTA_NAME or (slug, meta.get("namespace")) in wanted:
                continue
            try:
                cluster.delete(
                    Kind.RESOURCE_QUOTAS, QUOTA_NAME, meta["namespace"], uid=meta.get("uid")
                )
            except (NotFound, Conflict):
                continue
            deleted.append(f"{meta['namespace']}/{QUOTA_NAME}")
    return deleted


def check_backstops() -> dict[str, int]:
    """Beat: check every tenant with the backstop on (drift is recorded, not repaired) and
    prune orphans. Counts the namespaces per state."""
    counts: dict[str, int] = {}
    for tenant in Tenant.objects.filter(resource_quota_backstop=True):
        for result in check_backstop(tenant):
            counts[result.state] = counts.get(result.state, 0) + 1
    # Tenants turned off whose objects a failed sync left behind: their rows go with them.
    try:
        prune_orphans()
    except ClusterError as error:
        log.warning("backstop: cannot prune orphaned ResourceQuotas: %s", error)
        return counts
    BackstopStatus.objects.filter(tenant__resource_quota_backstop=False).delete()
    return counts
