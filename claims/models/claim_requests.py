"""A tenant's self-service request for devices, and its lifecycle.

(pending approval →) submitted → allocating → applied → in use → released / expired / failed
(or, while pending approval, denied or withdrawn). The request's id is
written on the ResourceClaim as the label ``dra-portal.io/request-id``, so applying is
idempotent (a retry finds the claim it made) and the mirror can tell the portal's claims apart.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from claims.models.class_policies import AllocationMode
from portal.models import Tenant
from toolkit.querysets import VisibleQuerySet

if TYPE_CHECKING:
    from django.contrib.auth.models import User

__all__ = ["ClaimRequest", "ClaimRequestQuerySet", "REQUEST_ID_LABEL", "RESERVATION_FINALIZER"]

REQUEST_ID_LABEL = "dra-portal.io/request-id"
RESERVATION_FINALIZER = "dra-portal.io/reservation"
# The states of a live request, written once: ``ClaimRequest.ACTIVE_STATES`` and the
# one-live-request-per-name constraint both read this.
ACTIVE_STATE_VALUES = (
    "pending_approval",
    "submitted",
    "allocating",
    "applied",
    "in_use",
    "releasing",
)


class ClaimRequestQuerySet(VisibleQuerySet["ClaimRequest"]):
    def visible_to_member(self, user: User) -> Self:
        """Portal admins see every request; others the requests of their tenants."""
        return self.filter(tenant__memberships__user=user)

    def active(self) -> ClaimRequestQuerySet:
        return self.filter(state__in=ClaimRequest.ACTIVE_STATES)

    def awaiting_approval(self) -> ClaimRequestQuerySet:
        """Waiting for a tenant admin or a portal admin: requests pending approval, and
        active requests whose renewal waits for approval (the queue's items)."""
        return self.filter(
            models.Q(state=ClaimRequest.State.PENDING_APPROVAL)
            | models.Q(renewal_requested_at__isnull=False)
        )

    def in_flight(self) -> ClaimRequestQuerySet:
        """Accepted but not yet applied: the quota holds them until the mirror shows the claim."""
        return self.filter(state__in=[ClaimRequest.State.SUBMITTED, ClaimRequest.State.ALLOCATING])


class ClaimRequest(models.Model):
    class State(models.TextChoices):
        PENDING_APPROVAL = "pending_approval", "Pending approval"
        SUBMITTED = "submitted", "Submitted"
        ALLOCATING = "allocating", "Allocating"
        APPLIED = "applied", "Applied"
        IN_USE = "in_use", "In use"
        RELEASING = "releasing", "Releasing"
        RELEASED = "released", "Released"
        EXPIRED = "expired", "Expired"
        FAILED = "failed", "Failed"
        DENIED = "denied", "Denied"
        # Withdrawn by its requester (or a tenant admin) while it waited for approval.
        WITHDRAWN = "withdrawn", "Withdrawn"

    class Sharing(models.TextChoices):
        CLAIM = "claim", "One claim, shared by the pods that reference it"
        TEMPLATE = "template", "A template: one claim per pod"

    ACTIVE_STATES = tuple(map(State, ACTIVE_STATE_VALUES))
    ENDED_STATES = (State.RELEASED, State.EXPIRED, State.FAILED, State.DENIED, State.WITHDRAWN)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="claim_requests")
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    device_class_name = models.CharField("device class", max_length=253)
    mode = models.CharField(max_length=20, choices=AllocationMode.choices)
    sharing = models.CharField(max_length=20, choices=Sharing.choices, default=Sharing.CLAIM)
    # The form's input as submitted (for the page, renew and retries) and the ResourceClaim
    # spec built from it.
    form = models.JSONField(default=dict)
    spec = models.JSONField()
    admin_access = models.BooleanField(default=False)
    # What the quota holds for the request while the mirror does not show its claim yet:
    # devices (count, or the matching devices for All), device memory (bytes), claims.
    held_devices = models.PositiveIntegerField(default=0)
    held_memory_bytes = models.PositiveBigIntegerField(default=0)
    lease = models.DurationField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    state = models.CharField(max_length=20, choices=State.choices, default=State.SUBMITTED)
    reason = models.TextField(blank=True)
    # Reservation mode: the status.allocation the portal wrote (assumed until mirrored).
    allocation = models.JSONField(null=True, blank=True)
    node_name = models.CharField(max_length=253, blank=True)
    # Where applying put the claim (or template): its uid, the resourceVersion of the portal's
    # last write to it, and the cluster's identity (the kube-system uid) then. With them the
    # mirror tells a claim gone (deleted, or the cluster replaced) from one not mirrored yet,
    # and an allocation someone else wrote from the portal's own (``mirror.following``).
    claim_uid = models.CharField(max_length=64, blank=True)
    claim_version = models.CharField(max_length=64, blank=True)
    cluster_uid = models.CharField(max_length=64, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    conflicts = models.PositiveIntegerField(default=0)
    # Set when the release comes from the lease ending: the request ends as expired.
    lease_ended = models.BooleanField(default=False)
    # Approval: why the request waits (one line per rule it crossed) and who decided.
    approval_reasons = models.JSONField(default=list, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True)
    # A renewal waiting for approval (``claims.requests.services.renew_request``): the lease it asks
    # for (from its approval), why it waits, who asked and when. The current lease runs on until
    # it is decided; approving it starts the new lease, denying it leaves the lease as it is.
    # ``renewal_requested_at`` is None when no renewal waits.
    renewal_lease = models.DurationField(null=True, blank=True)
    renewal_reasons = models.JSONField(default=list, blank=True)
    renewal_requested_at = models.DateTimeField(null=True, blank=True)
    renewal_requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    idempotency_key = models.CharField(max_length=200, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="claim_requests",
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    applied_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    objects = ClaimRequestQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # One live request per claim name: a name frees up when its request ends.
            models.UniqueConstraint(
                fields=["namespace", "name"],
                condition=models.Q(state__in=list(ACTIVE_STATE_VALUES)),
                name="one_active_request_per_claim_name",
            ),
            models.UniqueConstraint(
                fields=["requested_by", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="one_request_per_idempotency_key",
            ),
        ]
        indexes = [models.Index(fields=["tenant", "state"])]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    def get_absolute_url(self) -> str:
        return reverse("claimrequest-detail", kwargs={"pk": self.pk})

    @property
    def is_active(self) -> bool:
        return self.state in self.ACTIVE_STATES

    @property
    def has_pending_renewal(self) -> bool:
        return self.renewal_requested_at is not None

    @property
    def awaits_approval(self) -> bool:
        """Waiting for a decision: the request itself, or a renewal of its lease."""
        return self.state == self.State.PENDING_APPROVAL or self.has_pending_renewal

    @property
    def asked_by_id(self) -> Any:
        """Who asked for what waits for a decision: the renewal's asker, else the requester
        (nobody decides on what they asked for themselves,
        ``claims.requests.approvals.may_decide``)."""
        if self.has_pending_renewal:
            return self.renewal_requested_by_id
        return self.requested_by_id

    @property
    def is_template(self) -> bool:
        return self.sharing == self.Sharing.TEMPLATE

    @property
    def count_label(self) -> str:
        count = self.form.get("count")
        return "All" if count in (None, "All") else str(count)

    def labels(self) -> dict[str, Any]:
        return {REQUEST_ID_LABEL: str(self.pk)}

    def made(self, labels: Mapping[str, Any] | None) -> bool:
        """Whether an object with these labels was made for this request (the one check of
        the request-id label)."""
        return ClaimRequest.request_id_in(labels) == str(self.pk)

    @staticmethod
    def request_id_in(labels: Mapping[str, Any] | None) -> str | None:
        """The id of the portal request an object with these labels was made for; None for
        objects made outside the portal (or labelled with something that is no request id)."""
        value = (labels or {}).get(REQUEST_ID_LABEL)
        if not isinstance(value, str):
            return None
        try:
            return str(uuid.UUID(value))
        except ValueError:
            return None
