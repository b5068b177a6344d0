"""Notices about idle claims: flagged idle (once per idle episode) and reclaimed."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.urls import reverse

from claims.models import ClaimIdleness, ResourceClaim
from claims.usage.idle import claim_owner
from notifications.models import Event, Notification
from notifications.services import Notice, link, notify, tenant_admins, when
from portal.models import Tenant

__all__ = ["notify_claim_idle", "notify_idle_reclaim"]

log = logging.getLogger(__name__)


def _claim_recipients(tenant: Tenant, owner: AbstractBaseUser | None) -> list[AbstractBaseUser]:
    """Who hears about a claim: the requester of the portal request that made it, else (a claim
    made outside the portal) the tenant's admins."""
    return [owner] if owner is not None else tenant_admins(tenant)


def _idle_lines(idleness: ClaimIdleness, claim: str) -> list[str]:
    if idleness.reason == ClaimIdleness.Reason.NO_CONSUMER:
        assert idleness.unused_since is not None
        why = f"no pod has used it since {when(idleness.unused_since)}"
    else:
        assert idleness.low_since is not None
        why = (
            f"its devices have been under {idleness.threshold} % GPU utilisation since "
            f"{when(idleness.low_since)}"
        )
    lines = [f"Your claim {claim} holds devices but looks idle: {why}."]
    if idleness.reclaim_at is not None:
        lines.append(
            f"The portal reclaims it at {when(idleness.reclaim_at)} unless a pod uses it by "
            "then (a claim a pod reserves is never reclaimed)."
        )
    else:
        lines.append("Nothing happens to it automatically; release it if you no longer need it.")
    return lines


def notify_claim_idle(claim_id: int) -> int:
    """Tells the claim's owner (and the tenant's webhook) that it is idle: once per idle
    episode. A claim of no tenant, or with nobody to tell, is logged instead."""
    idleness = (
        ClaimIdleness.objects.select_related("claim", "claim__tenant")
        .filter(claim_id=claim_id)
        .first()
    )
    if idleness is None or not idleness.is_idle or idleness.notified_episode >= idleness.episode:
        return 0
    claim: ResourceClaim = idleness.claim
    name = f"{claim.namespace}/{claim.name}"
    sent: list[Notification] = []
    if claim.tenant is None:
        log.info("Idle claim %s: no tenant owns its namespace, nobody to tell", name)
    else:
        notice = Notice(
            event=Event.CLAIM_IDLE,
            key=f"{Event.CLAIM_IDLE}:{claim.uid}:{idleness.episode}",
            subject=f"Claim {name} is idle",
            lines=_idle_lines(idleness, name),
            path=claim.get_absolute_url(),
            object_type=ResourceClaim._meta.label,
            object_id=str(claim.pk),
            data={
                "claim": {"namespace": claim.namespace, "name": claim.name, "uid": claim.uid},
                "reason": idleness.reason,
                "idle_since": idleness.idle_since.isoformat() if idleness.idle_since else None,
                "reclaim_at": idleness.reclaim_at.isoformat() if idleness.reclaim_at else None,
                "url": link(claim.get_absolute_url()),
            },
        )
        recipients = _claim_recipients(claim.tenant, claim_owner(claim))
        sent = notify(notice, tenant=claim.tenant, users=recipients)
        if not recipients and not claim.tenant.webhook_url:
            log.info("Idle claim %s: its tenant has no admin and no webhook to tell", name)
    ClaimIdleness.objects.filter(pk=idleness.pk, notified_episode__lt=idleness.episode).update(
        notified_episode=idleness.episode
    )
    return len(sent)


def notify_idle_reclaim(
    *, claim_id: int, namespace: str, name: str, tenant_id: int | None, owner_id: Any, reason: str
) -> int:
    """Tells the owner (and the tenant's webhook) that their idle claim was deleted."""
    claim = f"{namespace}/{name}"
    tenant = Tenant.objects.filter(pk=tenant_id).first() if tenant_id else None
    if tenant is None:
        log.info("Reclaimed idle claim %s: no tenant owns its namespace, nobody to tell", claim)
        return 0
    owner = get_user_model().objects.filter(pk=owner_id).first() if owner_id else None
    why = "no pod used it" if reason == ClaimIdleness.Reason.NO_CONSUMER else "its GPUs sat idle"
    notice = Notice(
        event=Event.CLAIM_RECLAIMED,
        key=f"{Event.CLAIM_RECLAIMED}:idle:{claim_id}",
        subject=f"Claim {claim} reclaimed",
        lines=[
            f"Your claim {claim} was reclaimed: {why} past its grace period.",
            "Its devices go back to the pool. No pod was using it when it was deleted.",
        ],
        path=reverse("idle-claim-list"),
        object_type=ResourceClaim._meta.label,
        object_id=str(claim_id),
        data={"claim": {"namespace": namespace, "name": name}, "reason": "idle: " + reason},
    )
    return len(notify(notice, tenant=tenant, users=_claim_recipients(tenant, owner)))
