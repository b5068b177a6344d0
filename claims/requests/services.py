"""The write paths of self-service claims (STYLE §4): every entry point — form, API, admin,
management command, Celery task — calls these and nothing else changes a request.

* :func:`submit` (:func:`submit_request` answers only the request): check the input, the
  namespace, the class, the lease and — under the tenant's row lock — the idempotency key, the
  quota and the approval policy; record the request; enqueue applying it once committed, or
  leave it waiting for approval (``claims.requests.approvals``).
* :func:`release_request` (withdraws a pending request), :func:`renew_request`.
* :func:`tenant_lock`: the tenant's row lock that quota checks happen under.

States change only through ``claims.lifecycle.transitions``; talking to the cluster is the rest
of ``claims.lifecycle`` (its tasks, queued here once the transaction commits).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, NamedTuple

from django.contrib.auth.models import AnonymousUser, User
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from claims.capacity.index import index
from claims.lifecycle.leases import exceeded_longest, longest_lease
from claims.lifecycle.tasks import apply_claim_request, release_claim_request
from claims.lifecycle.transitions import (
    FORCED_RELEASE_REASON,
    NO_RENEWAL,
    RENEWAL_FIELDS,
    Move,
    transition,
)
from claims.models import AllocationMode, ClaimRequest, ClassPolicy, ResourceClaim
from claims.requests.quota import QuotaCheck, approval_reasons, check_quota, renewal_reasons
from claims.requests.specs import (
    PRESETS,
    ClaimInput,
    SpecErrors,
    build_spec,
    check_input,
    resolve_preset,
)
from claims.signals import approval_requested
from devices.models import DeviceClass, Namespace
from dra.model import InvalidObject
from portal.celery import enqueue_on_commit
from portal.models import AuditEvent, Quota, Tenant, TenantNamespace
from portal.services.audit import audited_delete, record_event, record_saved
from toolkit.durations import format_duration

__all__ = [
    "ADMIN_ACCESS_LABEL",
    "QuotaExceeded",
    "Submission",
    "clear_renewal",
    "default_lease",
    "delete_class_policy",
    "lease_for",
    "prepare",
    "release_request",
    "renew_request",
    "save_class_policy",
    "submit",
    "submit_request",
    "tenant_lock",
]

ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
# SQLite has no row locks: the embedded mode serialises submissions in the process instead.
_SUBMIT_LOCK = threading.Lock()


class QuotaExceeded(SpecErrors):
    """Over quota: ``check`` holds the usage, the limit and what would still fit."""

    def __init__(self, check: QuotaCheck) -> None:
        super().__init__({"quota": check.problems})
        self.check = check


def _is_staff(user: User | AnonymousUser | None) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_staff)


def _namespace_for(user: User | AnonymousUser, name: str) -> TenantNamespace | None:
    found = TenantNamespace.objects.select_related("tenant").filter(name=name)
    if not _is_staff(user):
        found = found.filter(tenant__in=Tenant.objects.visible_to(user))
    return found.first()


def prepare(
    user: User | AnonymousUser, claim: ClaimInput
) -> tuple[TenantNamespace, dict[str, Any], str, int, int]:
    """Every check that needs no lock: (namespace, spec, mode, devices held, memory held).

    Raises :class:`SpecErrors` with every field that is wrong."""
    errors: dict[str, list[str]] = {}
    try:
        check_input(claim)
    except SpecErrors as error:
        errors.update(error.errors)
    namespace = _namespace_for(user, claim.namespace) if claim.namespace else None
    if claim.namespace and namespace is None:
        errors["namespace"] = [f"'{claim.namespace[:63]}' is not a namespace of your tenant."]
    known = set(DeviceClass.objects.filter(name__in=claim.classes).values_list("name", flat=True))
    for name in claim.classes:
        if name and name not in known and "device_class" not in errors:
            field = "device_class" if name == claim.device_class_name else "alternatives"
            errors.setdefault(field, []).append(f"The cluster has no device class '{name[:253]}'.")
    if claim.admin_access:
        if not _is_staff(user):
            errors["admin_access"] = ["Only portal admins may ask for admin access."]
        else:
            labels = (
                Namespace.objects.filter(name=claim.namespace).values_list("raw", flat=True).first()
                or {}
            ).get("metadata", {}).get("labels") or {}
            if labels.get(ADMIN_ACCESS_LABEL) != "true":
                errors["admin_access"] = [
                    f"Admin access needs a namespace labelled {ADMIN_ACCESS_LABEL}=true; "
                    f"{claim.namespace} is not."
                ]
        if claim.alternatives:
            errors.setdefault("admin_access", []).append(
                "Admin access cannot be combined with alternatives."
            )
    mode = ClassPolicy.objects.mode_for(claim.device_class_name)
    if claim.mode and claim.mode != mode:
        if claim.mode not in AllocationMode.values:
            errors["mode"] = [f"Mode is one of {', '.join(AllocationMode.values)}."]
        elif not _is_staff(user):
            errors["mode"] = [
                f"Device class {claim.device_class_name} uses the {mode} mode; only portal "
                "admins may choose another."
            ]
        else:
            mode = AllocationMode(claim.mode)
    if mode == AllocationMode.RESERVATION and claim.sharing == "template":
        errors.setdefault("sharing", []).append(
            "Reservations hold one claim for the lease; a template (one claim per pod) needs "
            "the scheduler mode."
        )
    attribute = None
    if claim.constraint and "constraint" not in errors:
        attribute = resolve_preset(
            claim.constraint, index().class_published(claim.device_class_name)
        )
        if attribute is None:
            errors["constraint"] = [
                f"No device of class {claim.device_class_name} publishes an attribute for "
                f"'{PRESETS[claim.constraint][0]}' ({', '.join(PRESETS[claim.constraint][1])})."
            ]
    if errors:
        raise SpecErrors(errors)
    assert namespace is not None
    spec = build_spec(claim, attribute)
    try:
        parsed = index().parse(claim.namespace, claim.name, spec)
    except InvalidObject as error:
        raise SpecErrors({"spec": [str(error)]}) from error
    devices = memory = 0
    request = parsed.requests[0]
    first = request.exactly if request.exactly is not None else request.first_available[0]
    if not claim.admin_access:
        matching, largest = index().summary(first.device_class_name, first)
        devices = matching if claim.count is None else claim.count or 0
        memory = devices * largest
    return namespace, spec, mode, devices, memory


@contextlib.contextmanager
def tenant_lock(tenant_id: Any) -> Iterator[Tenant]:
    """A transaction holding the tenant's row lock (``SELECT … FOR NO KEY UPDATE``), yielding
    the tenant: quota checks and what they allow happen inside it, so concurrent submissions and
    approvals can never exceed a quota together.

    ``NO KEY``: the lock conflicts with itself (submissions stay one at a time per tenant) but
    not with the ``FOR KEY SHARE`` that PostgreSQL's foreign-key checks take at commit. With a
    plain ``FOR UPDATE``, every other transaction that inserted a row naming the tenant (the
    worker's audit events, the mirror's claims) waited at its COMMIT for the whole submission
    holding the lock: 33 ms a commit in the worker under four submitting threads.

    PostgreSQL: the row lock serialises them across processes. SQLite has no row locks; there
    a process lock does (the embedded mode is one process)."""
    lock = _SUBMIT_LOCK if connection.vendor == "sqlite" else contextlib.nullcontext()
    with lock, transaction.atomic():
        yield Tenant.objects.select_for_update(no_key=True).get(pk=tenant_id)


class Submission(NamedTuple):
    """What :func:`submit` did: the request, and whether it is one made earlier with the same
    idempotency key and body (a retry) rather than a new one."""

    request: ClaimRequest
    replayed: bool


def _earlier_request(
    requester: User | None, idempotency_key: str, claim: ClaimInput
) -> ClaimRequest | None:
    """The committed request ``requester`` made with ``idempotency_key``, or None; raises
    :class:`SpecErrors` on ``idempotency_key`` when it was made for another body."""
    existing = ClaimRequest.objects.filter(
        requested_by=requester, idempotency_key=idempotency_key
    ).first()
    if existing is not None and existing.form != claim.to_json():
        raise SpecErrors({"idempotency_key": ["This key was used for a different request."]})
    return existing


def submit_request(
    *,
    user: User | AnonymousUser,
    claim: ClaimInput,
    idempotency_key: str = "",
) -> ClaimRequest:
    """:func:`submit`, answering only the request."""
    return submit(user=user, claim=claim, idempotency_key=idempotency_key).request


def submit(
    *,
    user: User | AnonymousUser,
    claim: ClaimInput,
    idempotency_key: str = "",
) -> Submission:
    """Accept a request within the tenant's quota, or raise :class:`SpecErrors` /
    :class:`QuotaExceeded` with nothing recorded. Retrying with the same idempotency key and
    body answers the first request (``replayed``); the key with another body is refused on
    ``idempotency_key``.

    The key is decided race-free: requests that share it and run at once are ordered by the
    tenant's row lock (the key is looked at again once it is held), or, across tenants, by the
    key's unique index, which makes the second insert wait for the first transaction and fail;
    either way the later ones answer from the first one's committed row, never with an error
    about a claim name only that first request took.

    When the approval policy says so (``claims.requests.quota.approval_reasons``) the request is
    recorded as ``PENDING_APPROVAL`` with its reasons instead: it holds no quota, nothing is
    applied and its lease starts only when approved. Over the quota it waits only when the
    quota says ``approve_over_quota``; a lease longer than the quota's maximum is refused."""
    requester = user if user.is_authenticated else None
    if idempotency_key and (earlier := _earlier_request(requester, idempotency_key, claim)):
        return Submission(earlier, replayed=True)
    namespace, spec, mode, devices, memory = prepare(user, claim)
    with tenant_lock(namespace.tenant_id) as tenant:
        # Another request with this key may have committed while this one waited for the lock.
        if idempotency_key and (earlier := _earlier_request(requester, idempotency_key, claim)):
            return Submission(earlier, replayed=True)
        taken = (
            ClaimRequest.objects.active()
            .filter(namespace=claim.namespace, name=claim.name)
            .exists()
            or ResourceClaim.objects.filter(namespace=claim.namespace, name=claim.name).exists()
        )
        if taken:
            raise SpecErrors(
                {"name": [f"A claim named {claim.name} already exists in {claim.namespace}."]}
            )
        lease = lease_for(tenant, claim)
        check = check_quota(tenant, claim.device_class_name, devices=devices, memory_bytes=memory)
        # Admin access (portal admins only) is outside the quota and its approval policy.
        reasons = (
            []
            if claim.admin_access
            else approval_reasons(tenant, check, devices=devices, memory_bytes=memory, lease=lease)
        )
        if check.refuses(admin_access=claim.admin_access):
            raise QuotaExceeded(check)
        state = ClaimRequest.State.PENDING_APPROVAL if reasons else ClaimRequest.State.SUBMITTED
        now = timezone.now()
        try:
            with transaction.atomic():
                request = ClaimRequest.objects.create(
                    tenant=tenant,
                    namespace=claim.namespace,
                    name=claim.name,
                    device_class_name=claim.device_class_name,
                    mode=mode,
                    sharing=claim.sharing,
                    form=claim.to_json(),
                    spec=spec,
                    admin_access=claim.admin_access,
                    held_devices=devices,
                    held_memory_bytes=memory,
                    lease=lease,
                    # A pending request's lease starts when it is approved.
                    expires_at=now + lease if lease and not reasons else None,
                    state=state,
                    approval_reasons=reasons,
                    idempotency_key=idempotency_key,
                    requested_by=requester,
                    created_at=now,
                )
        except IntegrityError as error:
            # The key's unique index: a request under another tenant's lock took the key and
            # has committed by now (the insert waited for it).
            if idempotency_key and (earlier := _earlier_request(requester, idempotency_key, claim)):
                return Submission(earlier, replayed=True)
            raise SpecErrors(
                {"name": [f"A claim named {claim.name} already exists in {claim.namespace}."]}
            ) from error
        record_event(
            actor=requester,
            action=AuditEvent.Action.CLAIM_REQUESTED,
            obj=request,
            tenant=tenant,
            after={
                "state": request.state,
                "mode": mode,
                **claim.to_json(),
                **({"approval_reasons": reasons} if reasons else {}),
            },
        )
        if reasons:
            approval_requested.send(sender=ClaimRequest, request=request, renewal=False)
        else:
            enqueue_on_commit(apply_claim_request, str(request.pk))
    return Submission(request, replayed=False)


def default_lease(quota: Quota | None) -> timedelta | None:
    """The lease a request that asks for none gets: the longest that needs no approval where
    the quota sends longer leases to approval (``approve_above_lease``, within ``max_lease``),
    else the quota's longest (``max_lease``); None (held until released) without either."""
    if quota is None:
        return None
    if quota.approve_above_lease is not None:
        return min(quota.approve_above_lease, longest_lease(quota) or quota.approve_above_lease)
    return longest_lease(quota)


def lease_for(tenant: Tenant, claim: ClaimInput) -> timedelta | None:
    """The lease a request of ``claim`` gets: as asked, or :func:`default_lease` when it asks
    for none. Raises :class:`SpecErrors` for a lease longer than the quota allows."""
    quota = Quota.objects.filter(tenant=tenant, device_class_name=claim.device_class_name).first()
    lease = claim.lease
    if lease is None:
        return default_lease(quota)
    longest = exceeded_longest(quota, lease)
    if longest is not None:
        raise SpecErrors(
            {
                "lease": [
                    f"The longest lease for {claim.device_class_name} is "
                    f"{format_duration(longest)}."
                ]
            }
        )
    return lease


def save_class_policy(
    *,
    actor: User | AnonymousUser,
    device_class_name: str,
    mode: AllocationMode | str,
    previous: ClassPolicy | None = None,
) -> ClassPolicy:
    """Create or change the policy of a device class (renaming ``previous`` if the name
    changed); audited. Requests already accepted keep the mode they were given."""
    if mode not in AllocationMode.values:
        raise SpecErrors({"mode": [f"Mode is one of {', '.join(AllocationMode.values)}."]})
    actor_or_none = actor if actor.is_authenticated else None
    with transaction.atomic():
        # Saving a class that already has a policy changes that policy (safe to retry).
        policy = (
            ClassPolicy.objects.select_for_update().get(pk=previous.pk)
            if previous is not None
            else ClassPolicy.objects.select_for_update()
            .filter(device_class_name=device_class_name)
            .first()
        )
        before = {"device_class": policy.device_class_name, "mode": policy.mode} if policy else None
        if policy is None:
            policy = ClassPolicy.objects.create(device_class_name=device_class_name, mode=mode)
        elif (policy.device_class_name, policy.mode) == (device_class_name, mode):
            return policy  # nothing changes, nothing is recorded
        else:
            policy.device_class_name, policy.mode = device_class_name, mode
            policy.save(update_fields=["device_class_name", "mode", "updated_at"])
        record_saved(
            actor=actor_or_none,
            obj=policy,
            before=before,
            after={"device_class": policy.device_class_name, "mode": policy.mode},
        )
    return policy


def delete_class_policy(*, actor: User | AnonymousUser, policy: ClassPolicy) -> None:
    """Remove a class's policy (its requests go back to the scheduler mode); audited."""
    audited_delete(
        actor=actor if actor.is_authenticated else None,
        obj=policy,
        before={"device_class": policy.device_class_name, "mode": policy.mode},
    )


def release_request(
    *, user: User | AnonymousUser, request: ClaimRequest, force: bool = False
) -> ClaimRequest:
    """Delete the request's claim: refused while pods reserve it, unless a portal admin
    forces it. Releasing a request that is already ending changes nothing. A request waiting
    for approval is withdrawn: it ends as withdrawn at once, the cluster untouched."""
    if not request.is_active or request.state == ClaimRequest.State.RELEASING:
        return request
    actor = user if user.is_authenticated else None
    if request.state == ClaimRequest.State.PENDING_APPROVAL:
        if (
            not transition(
                request,
                Move.WITHDRAW,
                actor=actor,
                reason="withdrawn before approval",
            )
            and request.state == ClaimRequest.State.SUBMITTED
        ):
            return release_request(user=user, request=request, force=force)  # approved meanwhile
        return request
    claim = ResourceClaim.objects.filter(namespace=request.namespace, name=request.name).first()
    if claim is not None and claim.consumer_count and not (force and _is_staff(user)):
        pods = ", ".join(claim.consumers.values_list("name", flat=True)[:5])
        raise SpecErrors(
            {
                "state": [
                    f"Pods still use this claim ({pods}); delete them first"
                    + (", or force the release." if _is_staff(user) else ".")
                ]
            }
        )
    if transition(
        request,
        Move.RELEASE,
        actor=actor,
        reason="released by its owner" if not force else FORCED_RELEASE_REASON,
    ):
        enqueue_on_commit(release_claim_request, str(request.pk))
    return request


def renew_request(
    *, user: User | AnonymousUser, request: ClaimRequest, lease: timedelta | None
) -> ClaimRequest:
    """Start the lease again from now, for ``lease`` (default: the request's lease), within
    the quota's maximum.

    A renewal the approval policy sends to approval (``claims.requests.quota.renewal_reasons``: the
    tenant approves everything, or the lease is over the quota's threshold) is recorded on the
    request as waiting instead (``renewal_*``, audited): the current lease runs on unchanged
    until a tenant admin or portal admin decides (``claims.requests.approvals``); if it ends first,
    the claim is released as usual. A later renewal replaces one that waits."""
    if request.state == ClaimRequest.State.PENDING_APPROVAL:
        raise SpecErrors(
            {"state": ["This request waits for approval; its lease starts when it is approved."]}
        )
    _refuse_renewal_of_ended(request)
    lease = lease or request.lease
    quota = Quota.objects.filter(
        tenant=request.tenant, device_class_name=request.device_class_name
    ).first()
    lease = lease or longest_lease(quota)
    longest = exceeded_longest(quota, lease)
    if longest is not None:
        raise SpecErrors(
            {"lease": [f"The longest lease for this class is {format_duration(longest)}."]}
        )
    if lease is None:
        raise SpecErrors({"lease": ["This claim has no lease to renew."]})
    actor = user if user.is_authenticated else None
    with tenant_lock(request.tenant_id) as tenant:
        request.refresh_from_db()
        _refuse_renewal_of_ended(request)
        # Admin access (portal admins only) is outside the approval policy, as when submitted.
        reasons = [] if request.admin_access else renewal_reasons(tenant, quota, lease)
        now = timezone.now()
        before = request.expires_at
        if reasons:
            request.renewal_lease = lease
            request.renewal_reasons = reasons
            request.renewal_requested_at = now
            request.renewal_requested_by = actor
            request.save(update_fields=[*RENEWAL_FIELDS, "updated_at"])
            record_event(
                actor=actor,
                action=AuditEvent.Action.RENEWAL_REQUESTED,
                obj=request,
                tenant=tenant,
                before={"expires_at": before.isoformat() if before else None},
                after={"lease": format_duration(lease), "approval_reasons": reasons},
            )
            approval_requested.send(sender=ClaimRequest, request=request, renewal=True)
            return request
        request.lease = lease
        request.expires_at = now + lease
        waited = request.has_pending_renewal
        clear_renewal(request)
        request.save(update_fields=["lease", "expires_at", *RENEWAL_FIELDS, "updated_at"])
        record_event(
            actor=actor,
            action=AuditEvent.Action.CLAIM_RENEWED,
            obj=request,
            tenant=tenant,
            before={"expires_at": before.isoformat() if before else None},
            after={
                "expires_at": request.expires_at.isoformat(),
                **({"replaces_waiting_renewal": True} if waited else {}),
            },
        )
    return request


def clear_renewal(request: ClaimRequest) -> None:
    """Forget the renewal waiting on ``request`` (in place; the caller saves
    ``RENEWAL_FIELDS``)."""
    for key, value in NO_RENEWAL.items():
        setattr(request, key, list(value) if isinstance(value, list) else value)


def _refuse_renewal_of_ended(request: ClaimRequest) -> None:
    if not request.is_active or request.state == ClaimRequest.State.RELEASING:
        raise SpecErrors(
            {"state": [f"A {request.get_state_display().lower()} claim cannot be renewed."]}
        )
