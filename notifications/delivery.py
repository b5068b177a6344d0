"""Sending what notifications recorded: one email, one webhook delivery (Celery tasks, queued
once the recording commits; both safe to run twice)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.core.mail import EmailMessage
from django.db import transaction
from django.utils import timezone

from notifications import webhooks
from notifications.models import Notification, WebhookDelivery

__all__ = ["deliver_webhook", "retry_webhooks", "send_email"]

EMAIL_RETRY_SECONDS = 60


@shared_task(name="notifications.send_email", bind=True, max_retries=3, ignore_result=True)
def send_email(self: Any, notification_id: str) -> str:
    """Sends one email notification (claimed first, so a repeated task sends nothing)."""
    with transaction.atomic():
        claimed = Notification.objects.filter(
            pk=notification_id, channel=Notification.Channel.EMAIL, sent_at=None
        ).update(sent_at=timezone.now(), error="")
    if not claimed:
        return "nothing to do"
    notification = Notification.objects.select_related("user").get(pk=notification_id)
    assert notification.user is not None
    try:
        EmailMessage(
            subject=notification.subject,
            body=notification.body,
            to=[notification.user.email],
        ).send()
    except (OSError, ValueError) as error:
        Notification.objects.filter(pk=notification.pk).update(
            sent_at=None, error=f"Sending failed: {error}"[:500]
        )
        if not self.request.is_eager:
            raise self.retry(exc=error, countdown=EMAIL_RETRY_SECONDS) from error
        return "failed"
    return "sent"


@shared_task(name="notifications.deliver_webhook", bind=True, ignore_result=True)
def deliver_webhook(self: Any, delivery_id: str) -> str:
    """One attempt; on a worker the next one is queued after its backoff. In the embedded
    mode (tasks run inline) retries are left to the ``retry_webhooks`` beat sweep."""
    delivery = webhooks.attempt_delivery(delivery_id)
    if delivery is None:
        return "nothing to do"
    if delivery.state == WebhookDelivery.State.PENDING and not self.request.is_eager:
        assert delivery.next_attempt_at is not None
        countdown = max(0.0, (delivery.next_attempt_at - timezone.now()).total_seconds())
        deliver_webhook.apply_async((delivery_id,), countdown=countdown)
    return str(delivery.state)


@shared_task(name="notifications.retry_webhooks", ignore_result=True)
def retry_webhooks() -> int:
    """Beat: attempts every delivery that is due (a lost task, a restarted worker, or the
    embedded mode's retries)."""
    due = list(WebhookDelivery.objects.due(timezone.now()).values_list("pk", flat=True)[:500])
    for delivery_id in due:
        deliver_webhook.delay(str(delivery_id))
    return len(due)
