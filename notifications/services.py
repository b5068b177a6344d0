"""The write paths of notifications (STYLE §4): preferences, the fan-out of one notice to its
recipients, the beat checks (leases ending, quotas nearly used up) and a tenant's webhook.

A notice is recorded once per recipient and channel (``Notification.dedupe_key``) and sent by a
Celery task enqueued once the recording commits: email to the users who want it (no row for
those who opted out), a signed delivery to the tenant's webhook when it has one.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, User
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from claims.lifecycle.transitions import FORCED_RELEASE_REASON, GONE_REASONS
from claims.models import ClaimRequest
from claims.requests.quota import QuotaCheck, format_gib, quota_report
from notifications.delivery import deliver_webhook, send_email
from notifications.models import (
    Event,
    Notification,
    NotificationPreference,
    QuotaAlarm,
)
from notifications.webhooks import queue_delivery
from portal.celery import enqueue_on_commit
from portal.models import Membership, Tenant
from toolkit.durations import DurationError, format_duration, parse_duration

__all__ = [
    "Notice",
    "link",
    "tenant_admins",
    "when",
    "event_for_transition",
    "lease_lead",
    "notify",
    "notify_approval_waiting",
    "notify_claim_moved",
    "notify_expiring_leases",
    "notify_high_quotas",
    "notify_renewal_decided",
    "notify_request_event",
    "save_preferences",
]

log = logging.getLogger(__name__)

# claims.requests.services.release_request's reason when a portal admin forces a release.
State = ClaimRequest.State


def link(path: str) -> str:
    return f"{settings.PORTAL_URL}{path}"


# -- preferences ------------------------------------------------------------------------------


def save_preferences(*, user: User, email: Mapping[str, bool]) -> dict[Event, bool]:
    """Makes ``email`` (event → wanted; an event left out is off) the user's email choices."""
    with transaction.atomic():
        for event in Event:
            NotificationPreference.objects.update_or_create(
                user=user, event=event, defaults={"email": bool(email.get(event.value, False))}
            )
    return NotificationPreference.objects.email_choices(user)


# -- the fan-out ------------------------------------------------------------------------------


@dataclass(slots=True)
class Notice:
    """One occurrence of an event. ``key`` names the occurrence (the same situation seen twice
    has the same key); ``data`` is the webhook payload's ``data``."""

    event: Event
    key: str
    subject: str
    lines: list[str]
    path: str = ""
    object_type: str = ""
    object_id: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def _email_body(notice: Notice, user: AbstractBaseUser) -> str:
    name = getattr(user, "first_name", "") or user.get_username()
    parts = [f"Hello {name},", "", *notice.lines]
    if notice.path:
        parts += ["", link(notice.path)]
    parts += [
        "",
        "-- ",
        "DRA Portal. Choose which notifications you get by email: "
        + link(reverse("notification-preferences")),
    ]
    return "\n".join(parts)


def _record(**values: Any) -> Notification | None:
    """Creates the notification unless its dedupe key exists (answers None then)."""
    try:
        with transaction.atomic():
            return Notification.objects.create(**values)
    except IntegrityError:
        return None


def notify(
    notice: Notice, *, tenant: Tenant, users: Iterable[AbstractBaseUser]
) -> list[Notification]:
    """Records ``notice`` for each of ``users`` who wants it by email and for the tenant's
    webhook, and enqueues sending them on commit. Answers the notifications new this time:
    none when the notice was recorded before."""
    opted_out = set(
        NotificationPreference.objects.opted_out(notice.event).values_list("user_id", flat=True)
    )
    common = {
        "event": notice.event,
        "object_type": notice.object_type,
        "object_id": notice.object_id,
        "subject": notice.subject[:200],
        "url": link(notice.path) if notice.path else "",
    }
    recorded: list[Notification] = []
    with transaction.atomic():
        for user in {user.pk: user for user in users}.values():
            if user.pk in opted_out or not user.is_active:
                continue
            email = getattr(user, "email", "")
            notification = _record(
                **common,
                channel=Notification.Channel.EMAIL,
                user=user,
                body=_email_body(notice, user),
                dedupe_key=f"{notice.key}:email:{user.pk}",
                error="" if email else "Not sent: the user has no email address.",
            )
            if notification is not None:
                recorded.append(notification)
                if email:
                    enqueue_on_commit(send_email, str(notification.pk))
        if tenant.webhook_url:
            notification = _record(
                **common,
                channel=Notification.Channel.WEBHOOK,
                tenant=tenant,
                body="\n".join(notice.lines),
                dedupe_key=f"{notice.key}:webhook:{tenant.pk}",
            )
            if notification is not None:
                recorded.append(notification)
                delivery = queue_delivery(
                    tenant=tenant,
                    event=notice.event,
                    data=notice.data,
                    notification=notification,
                )
                enqueue_on_commit(deliver_webhook, str(delivery.pk))
    return recorded


# -- claim request events ---------------------------------------------------------------------


def event_for_transition(
    request: ClaimRequest, before: str, after: str, reason: str
) -> Event | None:
    """Which event (if any) a request's state change is."""
    if after == State.DENIED:
        return Event.REQUEST_DENIED
    if after == State.SUBMITTED and before == State.PENDING_APPROVAL:
        return Event.REQUEST_APPROVED
    if after == State.FAILED:
        return Event.REQUEST_FAILED
    if after == State.RELEASING and (request.lease_ended or reason == FORCED_RELEASE_REASON):
        return Event.CLAIM_RECLAIMED
    if after == State.RELEASED and reason in GONE_REASONS:
        return Event.CLAIM_GONE
    return None


def _request_data(request: ClaimRequest) -> dict[str, Any]:
    return {
        "request": {
            "id": str(request.pk),
            "namespace": request.namespace,
            "name": request.name,
            "device_class": request.device_class_name,
            "state": request.state,
            "reason": request.reason,
            "expires_at": request.expires_at.isoformat() if request.expires_at else None,
            "requested_by": request.requested_by.get_username() if request.requested_by else None,
            "url": link(request.get_absolute_url()),
        }
    }


def when(moment: datetime) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M %Z")


def _request_notice(request: ClaimRequest, event: Event, reason: str) -> Notice:
    claim = f"{request.namespace}/{request.name}"
    asked = f"{request.count_label} × {request.device_class_name} in {request.namespace}"
    decided = f" by {request.decided_by.get_username()}" if request.decided_by is not None else ""
    comment = [f"Comment: {request.decision_comment}"] if request.decision_comment else []
    if event == Event.REQUEST_APPROVED:
        subject = f"Claim {claim} approved"
        lines = [f"Your request for {asked} was approved{decided}; it is being allocated."]
        lines += comment
    elif event == Event.REQUEST_DENIED:
        subject = f"Claim {claim} denied"
        lines = [f"Your request for {asked} was denied{decided}.", *comment]
        if reason and not comment:
            lines.append(f"Reason: {reason}")
    elif event == Event.REQUEST_FAILED:
        subject = f"Claim {claim} failed"
        lines = [f"Your request for {asked} failed.", f"Reason: {reason or 'not given'}"]
    elif event == Event.CLAIM_GONE:
        subject = f"Claim {claim} is gone from the cluster"
        lines = [
            f"Your claim {claim} ({asked}) is no longer in the cluster: {reason}.",
            "Its request has ended and no longer counts against the quota. Pods that used it "
            "lost its devices; request the devices again if you still need them.",
        ]
    else:
        subject = f"Claim {claim} reclaimed"
        why = "its lease ended" if request.lease_ended else "a portal admin forced its release"
        lines = [
            f"Your claim {claim} ({asked}) is being released: {why}.",
            "Its devices go back to the pool; pods still using it lose them.",
        ]
    return Notice(
        event=event,
        key=f"{event}:{request.pk}",
        subject=subject,
        lines=lines,
        path=request.get_absolute_url(),
        object_type="claims.ClaimRequest",
        object_id=str(request.pk),
        data={**_request_data(request), "reason": reason},
    )


def notify_request_event(request: ClaimRequest, event: Event, reason: str = "") -> int:
    """Tells the requester (by email, if they want it) and the tenant's webhook."""
    users = [request.requested_by] if request.requested_by is not None else []
    return len(notify(_request_notice(request, event, reason), tenant=request.tenant, users=users))


def _device_text(side: Mapping[str, Any]) -> str:
    devices = [str(device) for *_, device in side.get("devices") or []]
    if not devices:
        return "no devices (its allocation was cleared)"
    node = side.get("node") or ""
    return ", ".join(devices) + (f" on {node}" if node else "")


def _notify_requester(
    request: ClaimRequest,
    *,
    event: Event,
    key: str,
    subject: str,
    lines: list[str],
    data: dict[str, Any] | None = None,
) -> list[Notification]:
    """One notice about ``request`` (linking its page) to its requester and the webhook."""
    notice = Notice(
        event=event,
        key=key,
        subject=subject,
        lines=lines,
        path=request.get_absolute_url(),
        object_type="claims.ClaimRequest",
        object_id=str(request.pk),
        data=_request_data(request) if data is None else data,
    )
    users = [request.requested_by] if request.requested_by is not None else []
    return notify(notice, tenant=request.tenant, users=users)


def notify_claim_moved(
    request: ClaimRequest, before: Mapping[str, Any], after: Mapping[str, Any]
) -> int:
    """Tells the requester (and the tenant's webhook) that the cluster holds other devices for
    their reservation than the portal wrote, and that the request now shows the cluster's."""
    claim = f"{request.namespace}/{request.name}"
    notified = _notify_requester(
        request,
        event=Event.CLAIM_MOVED,
        key=f"{Event.CLAIM_MOVED}:{request.pk}:{request.conflicts}",
        subject=f"Claim {claim} was moved to other devices",
        lines=[
            f"The portal reserved {_device_text(before)} for your claim {claim}; the cluster "
            f"now holds {_device_text(after)} for it.",
            "kube-scheduler replaces a reservation no pod holds yet when a pod using the claim "
            "cannot run on the reserved node (taints, node selector, resources). The claim's "
            "page shows what the cluster holds now; the conflict is in its timeline.",
        ],
        data={**_request_data(request), "before": dict(before), "after": dict(after)},
    )
    return len(notified)


# -- approvals waiting ------------------------------------------------------------------------


def _deciders(tenant: Tenant, asked_by_id: Any) -> list[AbstractBaseUser]:
    """Who may decide what ``asked_by_id`` asked for in ``tenant``: its other tenant admins,
    else (nobody else administers it) the portal admins."""
    admins = [user for user in tenant_admins(tenant) if user.pk != asked_by_id]
    if admins:
        return admins
    return list(get_user_model().objects.filter(is_staff=True, is_active=True))


def notify_approval_waiting(request: ClaimRequest, *, renewal: bool = False) -> int:
    """Tells the request's deciders (``_deciders``) by email, in their notifications and on
    the tenant's webhook that a request, or the renewal of its lease, waits for their decision,
    with a link to the approvals queue; once per request (or per renewal asked). Nothing when
    it no longer waits."""
    claim = f"{request.namespace}/{request.name}"
    asked = f"{request.count_label} × {request.device_class_name} in {request.namespace}"
    queue = f"{reverse('approval-list')}?tenant={request.tenant.slug}"
    if renewal:
        if not request.has_pending_renewal or request.state == State.PENDING_APPROVAL:
            return 0
        assert request.renewal_requested_at is not None
        asker = request.renewal_requested_by
        lease = request.renewal_lease
        reasons = list(request.renewal_reasons)
        key = f"{Event.APPROVAL_WAITING}:{request.pk}:{request.renewal_requested_at.isoformat()}"
        subject = f"Renewal of claim {claim} waits for your approval"
        what = (
            f"{asker.get_username() if asker else 'Someone'} asks to renew the lease of {claim} "
            f"({asked}) to {format_duration(lease) if lease else 'no lease'} from the approval; "
            "the current lease runs on until you decide."
        )
    else:
        if request.state != State.PENDING_APPROVAL:
            return 0
        asker = request.requested_by
        lease = request.lease
        reasons = list(request.approval_reasons)
        key = f"{Event.APPROVAL_WAITING}:{request.pk}"
        subject = f"Claim {claim} waits for your approval"
        what = (
            f"{asker.get_username() if asker else 'Someone'} asks for {asked}, lease "
            f"{format_duration(lease) if lease else 'none (held until released)'}."
        )
    notice = Notice(
        event=Event.APPROVAL_WAITING,
        key=key,
        subject=subject,
        lines=[
            what,
            "Why it waits:",
            *(f"  {reason}" for reason in reasons),
            "Approve or deny it in the approvals queue:",
        ],
        path=queue,
        object_type="claims.ClaimRequest",
        object_id=str(request.pk),
        data={
            **_request_data(request),
            "kind": "renewal" if renewal else "request",
            "lease": format_duration(lease) if lease else None,
            "approval_reasons": reasons,
            "queue_url": link(queue),
        },
    )
    deciders = _deciders(request.tenant, asker.pk if asker is not None else None)
    return len(notify(notice, tenant=request.tenant, users=deciders))


def notify_renewal_decided(
    request: ClaimRequest,
    *,
    approved: bool,
    lease: timedelta | None,
    comment: str = "",
    asked_by_id: Any = None,
) -> int:
    """Tells who asked for a renewal (and the tenant's webhook) that it was approved (the new
    lease runs from now) or denied (the lease is as it was)."""
    claim = f"{request.namespace}/{request.name}"
    asked = format_duration(lease) if lease else "no lease"
    event = Event.REQUEST_APPROVED if approved else Event.REQUEST_DENIED
    until = when(request.expires_at) if request.expires_at else "its release"
    outcome = f"approved: it runs until {until}" if approved else f"denied: it still ends {until}"
    lines = [f"The renewal of your claim {claim} to {asked} was {outcome}."]
    if comment:
        lines.append(f"Comment: {comment}")
    notice = Notice(
        event=event,
        key=f"{event}:renewal:{request.pk}:{request.updated_at.isoformat()}",
        subject=f"Renewal of claim {claim} {'approved' if approved else 'denied'}",
        lines=lines,
        path=request.get_absolute_url(),
        object_type="claims.ClaimRequest",
        object_id=str(request.pk),
        data={**_request_data(request), "kind": "renewal", "lease": asked, "comment": comment},
    )
    asker = get_user_model().objects.filter(pk=asked_by_id).first() if asked_by_id else None
    users = [asker] if asker is not None else []
    return len(notify(notice, tenant=request.tenant, users=users))


# -- beat: leases ending ----------------------------------------------------------------------


def lease_lead() -> timedelta:
    """``settings.NOTIFY_LEASE_LEAD``: a duration, or its text (``24h``, ``2d``); 24 hours
    when the text is not a duration (the settings module refuses one at start-up)."""
    lead = settings.NOTIFY_LEASE_LEAD
    if isinstance(lead, timedelta):
        return lead
    with contextlib.suppress(DurationError):
        return parse_duration(str(lead))
    return timedelta(hours=24)


def notify_expiring_leases(now: datetime | None = None) -> int:
    """Beat: owners of active requests whose lease ends within the lead time are told, once
    per request and expiry time (renewing the lease arms a new notice)."""
    now = now or timezone.now()
    sent = 0
    ending = (
        ClaimRequest.objects.active()
        .exclude(state__in=[State.RELEASING, State.PENDING_APPROVAL])
        .filter(expires_at__gt=now, expires_at__lte=now + lease_lead())
        .select_related("tenant", "requested_by")
    )
    for request in ending:
        assert request.expires_at is not None
        claim = f"{request.namespace}/{request.name}"
        left = format_duration(
            timedelta(minutes=int((request.expires_at - now).total_seconds() // 60))
        )
        sent += bool(
            _notify_requester(
                request,
                event=Event.LEASE_EXPIRING,
                key=f"{Event.LEASE_EXPIRING}:{request.pk}:{request.expires_at.isoformat()}",
                subject=f"Claim {claim}: lease ends in {left}",
                lines=[
                    f"The lease of your claim {claim} ({request.count_label} × "
                    f"{request.device_class_name}) ends at {when(request.expires_at)}, "
                    f"in {left}.",
                    "The portal then releases it. Renew it on its page to keep the devices.",
                ],
            )
        )
    return sent


# -- idle claims ------------------------------------------------------------------------------


# -- beat: quotas nearly used up --------------------------------------------------------------


def _high_measures(check: QuotaCheck, percent: int) -> list[dict[str, Any]]:
    """The measures of ``check`` at or above ``percent`` of their limit."""
    quota, usage = check.quota, check.usage
    assert quota is not None
    measures: list[tuple[str, int, int | None, Callable[[int], str]]] = [
        ("devices", usage.total_devices, quota.max_devices, str),
        ("device memory", usage.total_memory_bytes, quota.max_device_memory, format_gib),
        ("claims", usage.total_claims, quota.max_claims, str),
    ]
    return [
        {
            "measure": name,
            "used": used,
            "limit": limit,
            "percent": round(100 * used / limit),
            "text": f"{name}: {shown(used)} of {shown(limit)} ({round(100 * used / limit)} %)",
        }
        for name, used, limit, shown in measures
        if limit and used * 100 >= limit * percent
    ]


def tenant_admins(tenant: Tenant) -> list[AbstractBaseUser]:
    return list(
        get_user_model().objects.filter(
            memberships__tenant=tenant, memberships__role=Membership.Role.TENANT_ADMIN
        )
    )


def notify_high_quotas(tenant_ids: Iterable[Any] | None = None) -> int:
    """For each tenant (of ``tenant_ids``; all by default) and device class with a quota,
    raise the alarm (one notice to the tenant admins and the webhook) when usage reaches
    ``NOTIFY_QUOTA_HIGH_PERCENT`` of any limit, and clear it (re-arming the notice) once usage
    is back below every line. Runs when mirrored claims of a tenant change, and on beat."""
    percent = settings.NOTIFY_QUOTA_HIGH_PERCENT
    raised = 0
    tenants = Tenant.objects.filter(quotas__isnull=False).distinct()
    if tenant_ids is not None:
        tenants = tenants.filter(pk__in=list(tenant_ids))
    for tenant in tenants:
        for device_class, check in quota_report(tenant).items():
            if check.quota is None:
                continue
            high = _high_measures(check, percent)
            with transaction.atomic():
                alarm, _ = QuotaAlarm.objects.select_for_update().get_or_create(
                    tenant=tenant, device_class_name=device_class
                )
                if bool(high) == alarm.is_raised:
                    continue
                alarm.is_raised = bool(high)
                alarm.crossings += bool(high)
                alarm.save()
                if not high:
                    continue
                notice = Notice(
                    event=Event.QUOTA_HIGH,
                    key=f"{Event.QUOTA_HIGH}:{tenant.pk}:{device_class}:{alarm.crossings}",
                    subject=f"{tenant.name} uses {max(m['percent'] for m in high)} % of its "
                    f"{device_class} quota",
                    lines=[
                        f"{tenant.name} has reached {percent} % of its quota for {device_class}:",
                        *(f"  {m['text']}" for m in high),
                        "New claims may not fit. Release unused claims or ask a portal admin "
                        "for a larger quota.",
                    ],
                    path=tenant.get_absolute_url(),
                    object_type="portal.Quota",
                    object_id=str(check.quota.pk),
                    data={
                        "device_class": device_class,
                        "threshold_percent": percent,
                        "measures": [
                            {k: m[k] for k in ("measure", "used", "limit", "percent")} for m in high
                        ],
                        "usage": check.usage.to_json(),
                    },
                )
                notify(notice, tenant=tenant, users=tenant_admins(tenant))
                raised += 1
    return raised
