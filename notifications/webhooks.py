"""Signed webhook deliveries to a tenant's receiver, and their retries.

A delivery is POSTed as JSON with the headers ``X-DRA-Portal-Event``, ``X-DRA-Portal-Delivery``
(its id), ``X-DRA-Portal-Timestamp`` (Unix seconds) and ``X-DRA-Portal-Signature``:
``sha256=`` + the hex HMAC-SHA256 of ``"<timestamp>.<body>"`` keyed with the tenant's
``webhook_secret`` (docs/notifications.md shows a receiver checking it).

Outcomes: 2xx delivered; a 4xx other than 408 and 429 (and a redirect) gives up at once, since
repeating the same request cannot help; anything else (5xx, 408, 429, timeouts, refused
connections) is tried again after ``RETRY_DELAYS`` (the first try plus five retries). Secrets
never appear in errors or logs.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import secrets
import socket
import time
import urllib.error
import urllib.request
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import F
from django.utils import timezone

from notifications.destinations import embedded_ipv4, is_internal
from notifications.models import Notification, WebhookDelivery
from portal.models import Tenant

__all__ = [
    "MAX_ATTEMPTS",
    "RETRY_DELAYS",
    "attempt_delivery",
    "check_webhook_receiver",
    "check_webhook_url",
    "new_secret",
    "queue_delivery",
    "sign",
]

logger = logging.getLogger(__name__)

RETRY_DELAYS = (
    timedelta(seconds=10),
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
)
MAX_ATTEMPTS = 1 + len(RETRY_DELAYS)
# While an attempt is in flight its next_attempt_at is pushed this far out, so a second worker
# (or the retry sweep) cannot start the same attempt; a worker that died mid-attempt leaves the
# delivery due again after it.
IN_FLIGHT = timedelta(minutes=2)
RETRYABLE_4XX = {408, 429}
USER_AGENT = "DRA-Portal-Webhook/1"


def new_secret() -> str:
    """A fresh shared secret (256 bits, URL-safe)."""
    return "whsec_" + secrets.token_urlsafe(32)


def check_webhook_url(url: str) -> None:
    """Refuses anything but an absolute http(s) URL (no ``file:``, ``ftp:`` or credentials)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError({"webhook_url": "Enter an http:// or https:// URL."})
    if parts.username or parts.password:
        raise ValidationError(
            {"webhook_url": "Put no credentials in the URL: the shared secret signs deliveries."}
        )


def check_webhook_receiver(url: str) -> None:
    """What saving a webhook URL checks: :func:`check_webhook_url`, and that its host is not
    an address deliveries would refuse (:func:`check_destination`: loopback, private,
    link-local...), so the refusal comes when the URL is saved, naming the setting that allows
    it. A name that does not resolve now is accepted: it may before the first delivery, and a
    delivery that cannot resolve it is retried and says so."""
    check_webhook_url(url)
    try:
        check_destination(urlsplit(url).hostname or "")
    except InternalDestination as refused:
        raise ValidationError({"webhook_url": str(refused)}) from None
    except OSError:
        return


class InternalDestination(ValueError):
    """The webhook's host is (or resolves to) an address inside the portal's own network."""


def check_destination(hostname: str) -> None:
    """Refuses a host that is or resolves to a loopback, private, link-local (cloud metadata),
    reserved, multicast or other special-purpose address, or an IPv6 address that carries such
    an IPv4 address (``notifications.destinations``), unless ``WEBHOOK_ALLOW_PRIVATE_ADDRESSES``:
    a tenant admin must not make the portal's workers probe their own network. (A name that
    changes its answer between this check and the connection can still slip through; restrict
    egress as well.)"""
    if settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES:
        return
    try:
        infos = socket.getaddrinfo(hostname, None, proto=socket.IPPROTO_TCP)
    except OSError as failure:
        raise OSError(f"Cannot resolve {hostname}: {failure}") from failure
    for *_, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        if is_internal(address):
            carried = embedded_ipv4(address) if isinstance(address, ipaddress.IPv6Address) else []
            forms = "".join(f" ({form} of {ipv4})" for form, ipv4 in carried)
            raise InternalDestination(
                f"{hostname} resolves to {address}{forms}, an internal address; webhooks go "
                "to public receivers (a portal admin can allow internal ones with "
                "WEBHOOK_ALLOW_PRIVATE_ADDRESSES)."
            )


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-DRA-Portal-Signature`` value for ``body`` sent at ``timestamp``."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def queue_delivery(
    *, tenant: Tenant, event: str, data: dict[str, Any], notification: Any = None
) -> WebhookDelivery:
    """Records a delivery of ``event`` to the tenant's webhook, due now; the caller enqueues
    ``notifications.deliver_webhook`` (on commit)."""
    delivery = WebhookDelivery(tenant=tenant, event=event, notification=notification)
    delivery.payload = {
        "event": event,
        "id": str(delivery.id),
        "occurred_at": timezone.now().isoformat(),
        "tenant": tenant.slug,
        "data": data,
    }
    delivery.next_attempt_at = timezone.now()
    delivery.save()
    return delivery


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not a detour: the receiver's URL is what the tenant set."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirects)


def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    """POSTs and answers the status code; raises ``OSError`` for network failures."""
    check_webhook_url(url)
    check_destination(urlsplit(url).hostname or "")
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310  (scheme checked above)
    try:
        with _opener.open(request, timeout=settings.WEBHOOK_TIMEOUT_SECONDS) as response:
            response.read(65536)
            return int(response.status)
    except urllib.error.HTTPError as error:
        error.close()
        return int(error.code)


def attempt_delivery(delivery_id: Any, *, now: Any = None) -> WebhookDelivery | None:
    """Makes the delivery's next attempt if it is due (safe to call twice: the attempt is
    claimed with one conditional UPDATE), and records the outcome on the row. Answers the
    delivery, or None when there was nothing to do."""
    now = now or timezone.now()
    delivery = WebhookDelivery.objects.filter(pk=delivery_id).first()
    if delivery is None:
        return None
    claimed = (
        WebhookDelivery.objects.due(now)
        .filter(pk=delivery.pk, attempts=delivery.attempts)
        .update(attempts=F("attempts") + 1, next_attempt_at=now + IN_FLIGHT, last_attempt_at=now)
    )
    if not claimed:
        return None
    delivery.refresh_from_db()
    tenant = delivery.tenant
    status: int | None = None
    error = ""
    gives_up = False
    if not tenant.webhook_url:
        error = "The tenant has no webhook any more."
    else:
        body = json.dumps(delivery.payload, separators=(",", ":"), sort_keys=True).encode()
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-DRA-Portal-Event": delivery.event,
            "X-DRA-Portal-Delivery": str(delivery.pk),
            "X-DRA-Portal-Timestamp": timestamp,
        }
        if tenant.webhook_secret:
            headers["X-DRA-Portal-Signature"] = sign(tenant.webhook_secret, timestamp, body)
        try:
            status = _post(tenant.webhook_url, body, headers)
        except ValidationError as invalid:
            error = " ".join(invalid.messages)
        except InternalDestination as refused:
            error, gives_up = str(refused), True
        except (OSError, ValueError) as failure:
            error = _describe(failure)
    _record(delivery, status, error, started=now, refused=gives_up)
    return delivery


def _describe(failure: BaseException) -> str:
    reason = getattr(failure, "reason", None) or failure
    if isinstance(reason, TimeoutError) or "timed out" in str(reason):
        return f"No answer within {settings.WEBHOOK_TIMEOUT_SECONDS} s."
    return f"Could not connect: {reason}"[:500]


def _record(
    delivery: WebhookDelivery,
    status: int | None,
    error: str,
    *,
    started: Any,
    refused: bool = False,
) -> None:
    """The attempt's outcome; the next attempt is timed from this one's start. ``refused``:
    the portal would not send it (an internal destination), so it is not retried."""
    State = WebhookDelivery.State
    now = timezone.now()
    delivery.last_status_code = status
    if status is not None and 200 <= status < 300:
        delivery.state, delivery.delivered_at, delivery.next_attempt_at = State.DELIVERED, now, None
        delivery.last_error = ""
    else:
        if status is not None:
            error = f"The receiver answered HTTP {status}."
        gives_up = (
            refused
            or (status is not None and 300 <= status < 500 and status not in RETRYABLE_4XX)
            or delivery.tenant.webhook_url == ""
        )
        delivery.last_error = error
        if gives_up or delivery.attempts >= MAX_ATTEMPTS:
            delivery.state, delivery.next_attempt_at = State.FAILED, None
            delivery.last_error += (
                " Not retried." if gives_up else f" Gave up after {delivery.attempts} attempts."
            )
        else:
            delivery.next_attempt_at = started + RETRY_DELAYS[delivery.attempts - 1]
        logger.info(
            "webhook delivery %s to tenant %s: %s", delivery.pk, delivery.tenant.slug, error
        )
    delivery.save(
        update_fields=[
            "state",
            "last_status_code",
            "last_error",
            "next_attempt_at",
            "delivered_at",
        ]
    )
    if delivery.notification_id is not None:
        Notification.objects.filter(pk=delivery.notification_id).update(
            sent_at=delivery.delivered_at,
            error="" if delivery.state != WebhookDelivery.State.FAILED else delivery.last_error,
        )
