"""The events a user or a tenant's webhook can be told about."""

from __future__ import annotations

from django.db import models

__all__ = ["Event"]


class Event(models.TextChoices):
    REQUEST_APPROVED = "request_approved", "Request approved"
    REQUEST_DENIED = "request_denied", "Request denied"
    REQUEST_FAILED = "request_failed", "Request failed"
    LEASE_EXPIRING = "lease_expiring", "Lease expiring"
    CLAIM_RECLAIMED = "claim_reclaimed", "Claim reclaimed"
    QUOTA_HIGH = "quota_high", "Quota almost used up"
    CLAIM_IDLE = "claim_idle", "Claim idle"
    CLAIM_GONE = "claim_gone", "Claim gone from the cluster"
    CLAIM_MOVED = "claim_moved", "Claim moved by the cluster"
    APPROVAL_WAITING = "approval_waiting", "Waiting for your approval"

    @property
    def description(self) -> str:
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    Event.REQUEST_APPROVED: "A claim request of yours that waited for approval was approved.",
    Event.REQUEST_DENIED: "A claim request of yours that waited for approval was denied.",
    Event.REQUEST_FAILED: "A claim request of yours could not be applied to the cluster.",
    Event.LEASE_EXPIRING: "The lease of one of your claims ends soon (renew it to keep it).",
    Event.CLAIM_RECLAIMED: "A claim of yours was taken back: its lease ended, an admin "
    "forced its release, or it stayed idle past its grace period.",
    Event.QUOTA_HIGH: "A tenant you administer uses 90 % or more of a quota limit.",
    Event.CLAIM_IDLE: "A claim of yours holds devices that nothing uses (no pod, or almost no "
    "GPU utilisation); it may be reclaimed.",
    Event.CLAIM_GONE: "A claim of yours is no longer in the cluster (deleted outside the "
    "portal, or the cluster was replaced): its request ended and its quota is free.",
    Event.CLAIM_MOVED: "The cluster holds other devices for a claim of yours than the portal "
    "reserved (e.g. the kube-scheduler deallocated the reservation and allocated again).",
    Event.APPROVAL_WAITING: "A claim request, or the renewal of a claim's lease, in a tenant you "
    "administer waits for a decision (portal admins are told when the tenant has no other "
    "admin to decide).",
}
