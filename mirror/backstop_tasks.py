"""Celery tasks of the ResourceQuota backstop (thin: they call ``mirror.backstop``), and the
receivers that follow the portal's quota changes and a replaced cluster."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.db import transaction

from kube.errors import Unavailable
from kube.kinds import Kind
from mirror import backstop

__all__ = ["check_backstops", "check_replaced_cluster", "follow_quota_changes", "sync_backstop"]

# Seconds between retries while the API server is unreachable: 2, 4, 8 … up to a minute.
MAX_BACKOFF = 60


@shared_task(name="mirror.sync_backstop", bind=True, max_retries=None, ignore_result=True)
def sync_backstop(self: Any, tenant_id: int) -> str:
    """Apply the tenant's backstop; retried with backoff while the API server is unreachable
    (inline, in the embedded mode, the error stays on the status rows instead)."""
    try:
        return backstop.sync_backstop(tenant_id)
    except Unavailable as error:
        if self.request.is_eager:
            return "waiting for the API server"
        countdown = min(MAX_BACKOFF, 2 ** min(self.request.retries + 1, 6))
        raise self.retry(exc=error, countdown=countdown) from error


@shared_task(name="mirror.check_backstops", ignore_result=True)
def check_backstops() -> dict[str, int]:
    """Beat: record drift of every tenant's backstop (shown, not repaired) and prune orphans."""
    return backstop.check_backstops()


def follow_quota_changes(sender: Any, tenant_id: int, **kwargs: Any) -> None:
    """``portal.signals.quotas_changed``: once the change commits, sync the tenant's backstop
    if it concerns the cluster (``backstop.needs_sync``)."""

    def enqueue() -> None:
        if backstop.needs_sync(tenant_id):
            sync_backstop.delay(tenant_id)

    transaction.on_commit(enqueue)


def check_replaced_cluster(sender: Any, kind: Kind, **kwargs: Any) -> None:
    """``mirror.signals.cluster_replaced``: the namespaces (where the ResourceQuotas live) now
    come from another cluster, which may hold none of the backstop's objects: check every
    tenant's at once rather than at the next beat, so the page stops saying "in sync"."""
    if kind == Kind.NAMESPACES:
        check_backstops.delay_on_commit()
