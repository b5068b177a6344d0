"""The audit trail: every change made through the portal's services, with before and after."""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from django.conf import settings
from django.db import models

from portal.models.tenants import Tenant
from toolkit.querysets import VisibleQuerySet

if TYPE_CHECKING:
    from django.contrib.auth.models import User

__all__ = ["AuditEvent", "AuditEventQuerySet"]


class AuditEventQuerySet(VisibleQuerySet["AuditEvent"]):
    def visible_to_member(self, user: User) -> Self:
        """Portal admins see every event; tenant admins see their tenants' events."""
        return self.filter(tenant__in=Tenant.objects.administered_by(user))


class AuditEvent(models.Model):
    class Action(models.TextChoices):
        CREATED = "created", "Created"
        UPDATED = "updated", "Updated"
        DELETED = "deleted", "Deleted"
        TOKEN_CREATED = "token_created", "API token created"
        TOKEN_REVOKED = "token_revoked", "API token revoked"
        CLAIM_REQUESTED = "claim_requested", "Claim requested"
        CLAIM_STATE = "claim_state", "Claim request changed state"
        CLAIM_RENEWED = "claim_renewed", "Claim lease renewed"
        CLAIM_CONFLICT = "claim_conflict", "Reservation conflict resolved"
        CLAIM_APPROVED = "claim_approved", "Claim request approved"
        CLAIM_DENIED = "claim_denied", "Claim request denied"
        BACKSTOP_REPAIRED = "backstop_repaired", "ResourceQuota repaired"
        CLAIM_IDLE = "claim_idle", "Claim flagged idle"
        CLAIM_ACTIVE = "claim_active", "Claim no longer idle"
        CLAIM_RECLAIMED = "claim_reclaimed", "Idle claim reclaimed"
        CLAIM_RECLAIM_SKIPPED = "claim_reclaim_skipped", "Idle claim kept: a pod reserves it"
        RENEWAL_REQUESTED = "renewal_requested", "Lease renewal waits for approval"
        RENEWAL_EXPIRED = "renewal_expired", "Lease renewal not decided in time"
        SIGN_IN_LOCKED_OUT = "sign_in_locked_out", "Sign-in locked out"
        CONFIGURATION_APPLIED = "configuration_applied", "Configuration applied"

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # Kept as text so the trail still names the actor after the user is deleted.
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=30, choices=Action.choices)
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_events"
    )
    object_type = models.CharField(max_length=100)
    object_id = models.CharField(max_length=100, blank=True)
    object_repr = models.CharField(max_length=300, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["object_type", "object_id"])]

    def __str__(self) -> str:
        return f"{self.actor_name or 'system'} {self.action} {self.object_type} {self.object_repr}"
