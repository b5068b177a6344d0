"""Tenant admins are told when a request, or the renewal of a lease, waits for their
decision: by email, in their notifications and on the tenant's webhook, with a link to the
approvals queue. Whoever asked for a renewal is told how it was decided."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.urls import reverse

from claims.capacity.index import reset_index
from claims.requests.approvals import approve_request
from claims.requests.services import renew_request, submit_request
from claims.requests.specs import ClaimInput
from notifications.models import Event, Notification
from tests.claims.conftest import make_held, policy

pytestmark = pytest.mark.django_db
QUEUE_LINK = "/approvals/?tenant=team-a"


@pytest.fixture
def inventory(mirrored_cluster):
    reset_index()
    yield
    reset_index()


def ask(user, name="two-h100"):
    return submit_request(
        user=user,
        claim=ClaimInput(
            namespace="gpu-test1", name=name, device_class_name="gpu.nvidia.com", count=2
        ),
    )


def test_the_tenant_admin_is_emailed_that_a_request_waits_with_a_link_to_the_queue(
    inventory, alice, bob, team_a, django_capture_on_commit_callbacks
):
    policy(team_a, approve_above_devices=1)
    with django_capture_on_commit_callbacks(execute=True):
        ask(bob)
    [email] = mail.outbox
    assert email.to == ["alice@example.com"]
    assert email.subject == "Claim gpu-test1/two-h100 waits for your approval"
    assert "bob asks for 2 × gpu.nvidia.com in gpu-test1" in email.body
    assert "2 devices of gpu.nvidia.com: more than 1 needs approval." in email.body
    assert QUEUE_LINK in email.body
    notification = Notification.objects.get(user=alice)
    assert (notification.event, notification.url.endswith(QUEUE_LINK)) == (
        Event.APPROVAL_WAITING,
        True,
    )
    assert not Notification.objects.filter(user=bob).exists()


def test_the_portal_lists_it_in_the_tenant_admins_notifications(
    inventory, client_as, alice, bob, team_a, django_capture_on_commit_callbacks
):
    policy(team_a, approve_above_devices=1)
    with django_capture_on_commit_callbacks(execute=True):
        ask(bob)
    page = client_as(alice).get(reverse("notification-preferences")).content.decode()
    assert "Claim gpu-test1/two-h100 waits for your approval" in page
    assert "Waiting for your approval" in page  # the event, which she may turn off


def test_the_tenants_webhook_gets_the_waiting_request(
    inventory, alice, bob, team_a, team_a_webhook, django_capture_on_commit_callbacks
):
    policy(team_a, approve_above_devices=1)
    with django_capture_on_commit_callbacks(execute=True):
        ask(bob)
    [received] = team_a_webhook.received
    payload = received.payload
    assert payload["event"] == "approval_waiting"
    assert payload["data"]["kind"] == "request"
    assert payload["data"]["queue_url"].endswith(QUEUE_LINK)
    assert payload["data"]["request"]["state"] == "pending_approval"


def test_a_tenant_admins_own_request_goes_to_the_portal_admins_when_nobody_else_decides(
    inventory, alice, root, team_a, django_capture_on_commit_callbacks
):
    policy(team_a, approve_above_devices=1)
    with django_capture_on_commit_callbacks(execute=True):
        ask(alice)
    assert [email.to for email in mail.outbox] == [[root.email]]


def test_a_request_that_needs_no_approval_notifies_nobody(
    inventory, alice, bob, team_a, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        ask(bob)
    assert not Notification.objects.filter(event=Event.APPROVAL_WAITING).exists()


def test_a_waiting_renewal_is_announced_and_its_decision_told_to_who_asked(
    alice, bob, team_a, django_capture_on_commit_callbacks
):
    held = make_held(bob, team_a)
    with django_capture_on_commit_callbacks(execute=True):
        renew_request(user=bob, request=held, lease=timedelta(days=7))
    [email] = mail.outbox
    assert email.to == ["alice@example.com"]
    assert email.subject == "Renewal of claim gpu-test1/short-run waits for your approval"
    assert "to 7d from the approval; the current lease runs on" in email.body
    assert QUEUE_LINK in email.body
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        approve_request(user=alice, request=held, comment="fine")
    [told] = mail.outbox
    assert told.to == ["bob@example.com"]
    assert told.subject == "Renewal of claim gpu-test1/short-run approved"
    assert "Comment: fine" in told.body
