"""Approvals, through the services: which requests wait and why, approving (the quota checked
again), denying, withdrawing and expiring a pending request, and who may decide."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from claims.capacity.index import reset_index
from claims.models import ClaimRequest
from claims.requests.approvals import approve_request, deny_request, expire_approvals
from claims.requests.quota import tenant_usage
from claims.requests.services import QuotaExceeded, release_request, renew_request, submit_request
from claims.requests.specs import ClaimInput, SpecErrors
from kube.errors import NotFound
from kube.kinds import Kind
from portal.celery import app
from portal.models import AuditEvent, Membership
from tests.claims.conftest import policy
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db
GIB = 2**30
State = ClaimRequest.State


@pytest.fixture
def inventory(mirrored_cluster):
    reset_index()
    yield
    reset_index()


def ask(name="job", count=1, lease=None, namespace="gpu-test1"):
    return ClaimInput(
        namespace=namespace,
        name=name,
        device_class_name="gpu.nvidia.com",
        count=count,
        lease=lease,
    )


def submit(user, *args, **kwargs):
    return submit_request(user=user, claim=ask(*args, **kwargs))


# --- which requests wait, and why ----------------------------------------------------------------


def test_a_request_within_every_threshold_is_submitted_as_before(inventory, bob, team_a):
    policy(team_a, approve_above_devices=4)
    request = submit(bob, count=2)
    assert request.state == State.SUBMITTED
    assert request.approval_reasons == []


def test_a_tenant_that_requires_approval_sends_every_request_to_wait(inventory, bob, team_a):
    team_a.requires_approval = True
    team_a.save()
    request = submit(bob, lease=timedelta(days=2))
    assert request.state == State.PENDING_APPROVAL
    assert request.approval_reasons == ["Team A has every request approved."]
    # The lease is kept but starts only when approved.
    assert request.lease == timedelta(days=2)
    assert request.expires_at is None


def test_more_devices_than_the_threshold_waits_and_says_why(inventory, bob, team_a):
    policy(team_a, approve_above_devices=1)
    request = submit(bob, count=2)
    assert request.state == State.PENDING_APPROVAL
    assert request.approval_reasons == ["2 devices of gpu.nvidia.com: more than 1 needs approval."]


def test_more_device_memory_than_the_threshold_waits(inventory, bob, team_a):
    policy(team_a, approve_above_memory=100 * GIB)
    assert submit(bob, "one", count=1).state == State.SUBMITTED
    request = submit(bob, "two", count=2)
    assert request.state == State.PENDING_APPROVAL
    assert "of device memory: more than 100 GiB needs approval" in request.approval_reasons[0]


def test_a_lease_longer_than_the_threshold_waits(inventory, bob, team_a):
    policy(team_a, approve_above_lease=timedelta(days=1))
    assert submit(bob, "short", lease=timedelta(hours=12)).state == State.SUBMITTED
    request = submit(bob, "long", lease=timedelta(days=3))
    assert request.approval_reasons == ["A lease of 3d: leases longer than 1d need approval."]


def test_asking_for_no_lease_gets_the_longest_lease_that_needs_no_approval(inventory, bob, team_a):
    policy(team_a, approve_above_lease=timedelta(days=3), max_lease=timedelta(days=7))
    request = submit(bob)
    assert request.lease == timedelta(days=3)
    assert request.state == State.SUBMITTED
    assert request.approval_reasons == []


def test_without_a_lease_maximum_no_lease_gets_the_approval_threshold(inventory, bob, team_a):
    policy(team_a, approve_above_lease=timedelta(days=1))
    request = submit(bob)
    assert (request.lease, request.state) == (timedelta(days=1), State.SUBMITTED)


def test_asking_for_no_lease_without_a_lease_rule_gets_the_quota_maximum(inventory, bob, team_a):
    policy(team_a, max_lease=timedelta(days=7))
    assert submit(bob).lease == timedelta(days=7)


def test_every_rule_crossed_gives_its_own_line(inventory, bob, team_a):
    team_a.requires_approval = True
    team_a.save()
    policy(team_a, approve_above_devices=1, approve_above_lease=timedelta(days=1))
    request = submit(bob, count=2, lease=timedelta(days=2))
    assert len(request.approval_reasons) == 3


def test_over_quota_is_refused_unless_the_quota_sends_it_for_approval(inventory, bob, team_a):
    policy(team_a, max_devices=1)
    with pytest.raises(QuotaExceeded):
        submit(bob, count=2)
    assert not ClaimRequest.objects.exists()
    policy(team_a, approve_over_quota=True)
    request = submit(bob, count=2)
    assert request.state == State.PENDING_APPROVAL
    assert request.approval_reasons[0].startswith("Over quota: Devices: 0 of 1")


def test_a_tenant_that_requires_approval_is_still_refused_over_quota(inventory, bob, team_a):
    team_a.requires_approval = True
    team_a.save()
    policy(team_a, max_devices=1)
    with pytest.raises(QuotaExceeded):
        submit(bob, count=2)


def test_a_lease_over_the_quota_maximum_is_refused_outright_even_when_approvals_are_possible(
    inventory, bob, team_a
):
    team_a.requires_approval = True
    team_a.save()
    policy(team_a, max_lease=timedelta(days=7), approve_over_quota=True)
    with pytest.raises(SpecErrors) as refused:
        submit(bob, lease=timedelta(days=8))
    assert "lease" in refused.value.errors


def test_a_pending_request_holds_no_quota_but_holds_its_name(inventory, bob, team_a):
    policy(team_a, approve_above_devices=1)
    submit(bob, "big", count=4)
    assert tenant_usage(team_a).get("gpu.nvidia.com") is None
    with pytest.raises(SpecErrors) as refused:
        submit(bob, "big", count=1)
    assert "already exists" in str(refused.value)


def test_a_pending_request_is_recorded_with_its_reasons(inventory, bob, team_a):
    policy(team_a, approve_above_devices=1)
    request = submit(bob, count=2)
    event = AuditEvent.objects.get(action=AuditEvent.Action.CLAIM_REQUESTED)
    assert event.object_id == str(request.pk)
    assert event.after["state"] == State.PENDING_APPROVAL
    assert event.after["approval_reasons"] == request.approval_reasons


# --- approving -----------------------------------------------------------------------------------


@pytest.fixture
def pending(inventory, bob, team_a):
    """bob's request for 2 devices, waiting because team-a approves more than 1."""
    policy(team_a, approve_above_devices=1)
    return submit(bob, "pending", count=2, lease=timedelta(days=2))


def test_a_tenant_admin_approves_a_pending_request_and_its_lease_starts_then(pending, alice):
    approve_request(user=alice, request=pending, comment="for the deadline")
    pending.refresh_from_db()
    assert pending.state == State.SUBMITTED
    assert pending.decided_by == alice
    assert pending.decision_comment == "for the deadline"
    assert pending.expires_at == pending.decided_at + timedelta(days=2)
    approved = AuditEvent.objects.get(action=AuditEvent.Action.CLAIM_APPROVED)
    assert approved.actor == alice
    assert approved.after == {"state": "submitted", "comment": "for the deadline"}
    assert tenant_usage(pending.tenant)["gpu.nvidia.com"].total_devices == 2  # held now


def test_approving_an_approved_request_changes_nothing(pending, alice, root):
    approve_request(user=alice, request=pending)
    decided_at = ClaimRequest.objects.get().decided_at
    again = approve_request(user=root, request=ClaimRequest.objects.get())
    assert again.decided_by == alice
    assert again.decided_at == decided_at
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CLAIM_APPROVED).count() == 1


def test_a_request_that_no_longer_fits_stays_pending_and_the_admin_is_told_why(
    inventory, bob, alice, team_a
):
    policy(team_a, approve_above_devices=4)
    first = submit(bob, "first", count=5)
    second = submit(bob, "second", count=5)
    approve_request(user=alice, request=first)
    with pytest.raises(QuotaExceeded) as refused:
        approve_request(user=alice, request=second)
    message = str(refused.value)
    assert "Devices: 5 of 8 in use or requested" in message
    assert "raise the quota" in message
    second.refresh_from_db()
    assert second.state == State.PENDING_APPROVAL
    assert second.decided_at is None


def test_an_approval_may_not_exceed_a_lease_maximum_lowered_since(pending, alice, team_a):
    policy(team_a, max_lease=timedelta(days=1))
    with pytest.raises(SpecErrors) as refused:
        approve_request(user=alice, request=pending)
    assert "longest lease" in refused.value.errors["lease"][0]


# --- denying -------------------------------------------------------------------------------------


def test_denying_needs_a_comment_for_the_requester(pending, alice):
    with pytest.raises(SpecErrors) as refused:
        deny_request(user=alice, request=pending, comment="  ")
    assert "comment" in refused.value.errors
    pending.refresh_from_db()
    assert pending.state == State.PENDING_APPROVAL


def test_a_denied_request_ends_with_the_decision_recorded(pending, alice):
    deny_request(user=alice, request=pending, comment="use the A100s")
    pending.refresh_from_db()
    assert pending.state == State.DENIED
    assert pending.reason == "denied: use the A100s"
    assert (pending.decided_by, pending.decision_comment) == (alice, "use the A100s")
    assert pending.ended_at is not None
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CLAIM_DENIED).count() == 1


def test_a_denied_request_cannot_be_approved_and_an_approved_one_cannot_be_denied(
    inventory, bob, alice, team_a
):
    policy(team_a, approve_above_devices=1)
    denied = submit(bob, "denied", count=2)
    deny_request(user=alice, request=denied, comment="no")
    with pytest.raises(SpecErrors) as refused:
        approve_request(user=alice, request=denied)
    assert refused.value.errors["state"] == [
        "This request was denied by alice; it cannot be approved."
    ]
    assert deny_request(user=alice, request=denied, comment="no").state == State.DENIED
    approved = submit(bob, "approved", count=2)
    approve_request(user=alice, request=approved)
    with pytest.raises(SpecErrors):
        deny_request(user=alice, request=approved, comment="too late")


# --- who may decide ------------------------------------------------------------------------------


def test_members_and_other_tenants_may_not_decide(pending, bob, carol):
    for user in (bob, carol):
        with pytest.raises(PermissionDenied):
            approve_request(user=user, request=pending)
        with pytest.raises(PermissionDenied):
            deny_request(user=user, request=pending, comment="no")


def test_a_tenant_admin_may_not_decide_her_own_request(inventory, alice, team_a):
    policy(team_a, approve_above_devices=1)
    own = submit(alice, count=2)
    with pytest.raises(PermissionDenied, match="your own request"):
        approve_request(user=alice, request=own)
    with pytest.raises(PermissionDenied):
        deny_request(user=alice, request=own, comment="no")


def test_another_tenant_admin_of_the_tenant_decides_it(inventory, alice, team_a):
    policy(team_a, approve_above_devices=1)
    own = submit(alice, count=2)
    dave = UserFactory(username="dave")
    MembershipFactory(user=dave, tenant=team_a, role=Membership.Role.TENANT_ADMIN)
    assert approve_request(user=dave, request=own).state == State.SUBMITTED


def test_a_portal_admin_may_approve_his_own_request(inventory, root, team_a):
    team_a.requires_approval = True
    team_a.save()
    own = submit(root)
    assert own.state == State.PENDING_APPROVAL
    assert approve_request(user=root, request=own).state == State.SUBMITTED


# --- withdrawing and expiring --------------------------------------------------------------------


def test_the_requester_withdraws_a_pending_request_without_touching_the_cluster(pending, bob):
    release_request(user=bob, request=pending)
    pending.refresh_from_db()
    assert pending.state == State.WITHDRAWN
    assert pending.reason == "withdrawn before approval"


def test_a_pending_request_has_no_lease_to_renew(pending, bob):
    with pytest.raises(SpecErrors, match="waits for approval"):
        renew_request(user=bob, request=pending, lease=None)


def test_requests_not_approved_in_time_expire(pending, bob, settings):
    settings.CLAIMS_APPROVAL_TIMEOUT = timedelta(days=3)
    fresh = submit(bob, "fresh", count=2)
    ClaimRequest.objects.filter(pk=pending.pk).update(
        created_at=timezone.now() - timedelta(days=3, minutes=1)
    )
    assert expire_approvals() == 1
    pending.refresh_from_db()
    fresh.refresh_from_db()
    assert pending.state == State.EXPIRED
    assert pending.reason == "not approved within 3d"
    assert fresh.state == State.PENDING_APPROVAL
    assert expire_approvals() == 0


def test_expiring_approvals_runs_on_celery_beat():
    schedule = {entry["task"] for entry in app.conf.beat_schedule.values()}
    assert "claims.expire_approvals" in schedule
    assert "claims.expire_approvals" in app.tasks


# --- end to end, against the emulator ------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_over_quota_waits_then_once_the_quota_is_raised_the_approval_applies_it(
    live, bob, alice, team_a
):
    _, cluster, _ = live
    policy(team_a, max_devices=1, approve_over_quota=True)
    request = submit(bob, "big-run", count=2)
    assert request.state == State.PENDING_APPROVAL
    with pytest.raises(NotFound):
        cluster.get(Kind.RESOURCE_CLAIMS, "big-run", "gpu-test1")
    with pytest.raises(QuotaExceeded):
        approve_request(user=alice, request=request)  # approval never exceeds the quota
    policy(team_a, max_devices=8)
    approve_request(user=alice, request=request, comment="quota raised")
    request.refresh_from_db()
    assert request.state == State.APPLIED, request.reason
    claim = cluster.get(Kind.RESOURCE_CLAIMS, "big-run", "gpu-test1")
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2


@pytest.mark.django_db(transaction=True)
def test_a_denied_request_never_reaches_the_cluster(live, bob, alice, team_a):
    _, cluster, _ = live
    policy(team_a, approve_above_devices=1)
    request = submit(bob, "denied-run", count=2)
    deny_request(user=alice, request=request, comment="not this week")
    with pytest.raises(NotFound):
        cluster.get(Kind.RESOURCE_CLAIMS, "denied-run", "gpu-test1")
