"""A tenant's webhook settings (STYLE §4): its address, its secret, a test event; audited."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from notifications.delivery import deliver_webhook
from notifications.models import TEST_EVENT, WebhookDelivery
from notifications.webhooks import (
    check_webhook_receiver,
    check_webhook_url,
    new_secret,
    queue_delivery,
)
from portal.celery import enqueue_on_commit
from portal.models import Tenant
from portal.services.tenants import save_tenant

__all__ = ["remove_webhook", "rotate_webhook_secret", "send_test_event", "set_webhook_url"]


def set_webhook_url(*, actor: User, tenant: Tenant, url: str) -> tuple[Tenant, str]:
    """Points the tenant's webhook at ``url`` (http or https only, to an address deliveries
    accept: ``check_webhook_receiver``); audited. A webhook without a secret gets one: answers
    the tenant and the new secret ("" when it kept its own)."""
    url = url.strip()
    check_webhook_receiver(url)
    secret = "" if tenant.webhook_secret else new_secret()
    fields: dict[str, Any] = {"webhook_url": url}
    if secret:
        fields["webhook_secret"] = secret
    return save_tenant(actor=actor, tenant=tenant, **fields), secret


def rotate_webhook_secret(*, actor: User, tenant: Tenant) -> tuple[Tenant, str]:
    """Gives the tenant a new webhook secret (shown to the caller once); audited."""
    secret = new_secret()
    return save_tenant(actor=actor, tenant=tenant, webhook_secret=secret), secret


def remove_webhook(*, actor: User, tenant: Tenant) -> Tenant:
    """No more deliveries: the URL and the secret are cleared; audited."""
    return save_tenant(actor=actor, tenant=tenant, webhook_url="", webhook_secret="")


def send_test_event(*, actor: User, tenant: Tenant) -> WebhookDelivery:
    """Queues a ``test`` event to the tenant's webhook (refused when it has none)."""
    if not tenant.webhook_url:
        raise ValidationError("This tenant has no webhook yet: save its URL first.")
    check_webhook_url(tenant.webhook_url)
    with transaction.atomic():
        delivery = queue_delivery(
            tenant=tenant,
            event=TEST_EVENT,
            data={
                "message": "A test event from DRA Portal.",
                "sent_by": actor.get_username(),
            },
        )
        enqueue_on_commit(deliver_webhook, str(delivery.pk))
    return delivery
