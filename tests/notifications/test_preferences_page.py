"""/account/notifications/: each user chooses which notifications they get by email."""

from __future__ import annotations

import pytest
from django.urls import reverse

from notifications.models import Event, Notification, NotificationPreference

pytestmark = pytest.mark.django_db
URL = "/account/notifications/"


def test_the_page_is_at_account_notifications_and_linked_from_the_user_menu(client_as, bob):
    assert reverse("notification-preferences") == URL
    body = client_as(bob).get(reverse("dashboard")).content.decode()
    assert f'href="{URL}"' in body


def test_anonymous_users_are_sent_to_the_login(client):
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_everything_is_on_by_default(client_as, bob):
    response = client_as(bob).get(URL)
    assert response.status_code == 200
    body = response.content.decode()
    for event in Event:
        assert f'name="{event.value}" value="on" checked' in body
    assert "No notifications yet" in body


def test_choices_are_saved_without_javascript(client_as, bob, alice):
    client = client_as(bob)
    response = client.post(URL, {"request_failed": "on", "lease_expiring": "on"})
    assert response.status_code == 302
    chosen = NotificationPreference.objects.email_choices(bob)
    assert {event for event, on in chosen.items() if on} == {
        Event.REQUEST_FAILED,
        Event.LEASE_EXPIRING,
    }
    body = client.get(URL).content.decode()
    assert 'name="request_failed" value="on" checked' in body
    assert 'name="request_denied" value="on">' in body
    assert "Your notification choices are saved." in body
    # Alice's choices are her own.
    assert all(NotificationPreference.objects.email_choices(alice).values())


def test_saving_twice_keeps_one_row_per_event(client_as, bob):
    client_as(bob).post(URL, {})
    client_as(bob).post(URL, {"quota_high": "on"})
    assert NotificationPreference.objects.filter(user=bob).count() == len(Event)


def test_the_page_lists_the_users_own_recent_notifications(client_as, bob, alice):
    for user, subject in ((bob, "Claim gpu-test1/mine failed"), (alice, "Alice's notice")):
        Notification.objects.create(
            event=Event.REQUEST_FAILED,
            channel=Notification.Channel.EMAIL,
            user=user,
            subject=subject,
            dedupe_key=f"k:{user.pk}",
        )
    body = client_as(bob).get(URL).content.decode()
    assert "Claim gpu-test1/mine failed" in body
    assert "Alice&#x27;s notice" not in body and "Alice's notice" not in body


def test_a_user_without_an_email_address_is_warned(client_as, bob):
    bob.email = ""
    bob.save()
    body = client_as(bob).get(URL).content.decode()
    assert 'data-testid="no-email"' in body
