"""Notifications: what users want to hear about, what was sent, and webhook deliveries."""

from notifications.models.events import Event
from notifications.models.notifications import Notification
from notifications.models.preferences import NotificationPreference
from notifications.models.quota_alarms import QuotaAlarm
from notifications.models.webhooks import TEST_EVENT, WebhookDelivery

__all__ = [
    "TEST_EVENT",
    "Event",
    "Notification",
    "NotificationPreference",
    "QuotaAlarm",
    "WebhookDelivery",
]
