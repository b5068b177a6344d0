"""The approvals queue, the approve / deny actions, and approvals on the request's page and
the New claim form; who may see and do what."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from claims.capacity.index import reset_index
from claims.models import ClaimRequest
from portal.models import Membership, Quota
from tests.claims.conftest import make_pending
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db
State = ClaimRequest.State
QUEUE = "/approvals/"


def approve_url(request):
    return reverse("approval-approve", kwargs={"pk": request.pk})


def deny_url(request):
    return reverse("approval-deny", kwargs={"pk": request.pk})


@pytest.fixture
def dave(team_b):
    """A tenant admin of team-b."""
    user = UserFactory(username="dave")
    MembershipFactory(user=user, tenant=team_b, role=Membership.Role.TENANT_ADMIN)
    return user


# --- the queue -----------------------------------------------------------------------------------


def test_a_tenant_admin_sees_her_tenants_pending_requests_with_why_and_the_usage(
    client_as, alice, bob, carol, team_a, team_b
):
    make_pending(bob, team_a, "bobs-run")
    make_pending(carol, team_b, "carols-run", namespace="team-b-prod")
    response = client_as(alice).get(QUEUE)
    assert response.status_code == 200
    content = response.content.decode()
    assert "bobs-run" in content
    assert "carols-run" not in content
    assert "2 devices of gpu.nvidia.com: more than 1 needs approval." in content
    assert "devices 0 of 8" in content
    assert "fits now" in content
    assert "expires in 2" in content  # days (the default timeout is 3d; created just now)
    assert 'data-testid="approve"' in content


def test_a_portal_admin_sees_every_tenant_and_filters_by_one(
    client_as, root, bob, carol, team_a, team_b
):
    make_pending(bob, team_a, "bobs-run")
    make_pending(carol, team_b, "carols-run", namespace="team-b-prod")
    content = client_as(root).get(QUEUE).content.decode()
    assert "bobs-run" in content and "carols-run" in content
    content = client_as(root).get(QUEUE, {"tenant": "team-b"}).content.decode()
    assert "bobs-run" not in content and "carols-run" in content


def test_the_queue_says_when_a_request_would_not_fit_now(client_as, alice, bob, team_a):
    make_pending(bob, team_a, devices=9)
    content = client_as(alice).get(QUEUE).content.decode()
    assert 'data-testid="approval-over-quota"' in content
    assert "9 more would exceed the quota" in content


def test_members_are_told_that_approving_is_their_admins_job(client_as, bob, carol):
    for user in (bob, carol):
        response = client_as(user).get(QUEUE)
        assert response.status_code == 403
        assert "Only tenant admins and portal admins approve" in response.content.decode()


def test_anonymous_visitors_are_sent_to_log_in(client, bob, team_a):
    pending = make_pending(bob, team_a)
    for response in (
        client.get(QUEUE),
        client.post(approve_url(pending)),
        client.post(deny_url(pending), {"comment": "no"}),
        client.get(reverse("approval-count")),
    ):
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))
    pending.refresh_from_db()
    assert pending.state == State.PENDING_APPROVAL


def test_an_empty_queue_says_so(client_as, alice):
    content = client_as(alice).get(QUEUE).content.decode()
    assert "Nothing waits for approval" in content


def test_the_queue_is_paginated(client_as, alice, bob, team_a):
    for index in range(30):
        make_pending(bob, team_a, f"run-{index:02}")
    first = client_as(alice).get(QUEUE).content.decode()
    assert first.count('data-testid="approval-row"') == 25
    assert "Page 1 of 2" in first
    second = client_as(alice).get(QUEUE, {"page": 2}).content.decode()
    assert second.count('data-testid="approval-row"') == 5


def test_decided_requests_are_listed_in_their_own_tab(client_as, alice, bob, team_a):
    pending = make_pending(bob, team_a)
    client_as(alice).post(deny_url(pending), {"comment": "use the A100s"})
    content = client_as(alice).get(QUEUE, {"tab": "decided"}).content.decode()
    assert "Denied by alice" in content
    assert "use the A100s" in content
    assert (
        "No decisions yet"
        in client_as(alice).get(QUEUE, {"tab": "decided", "tenant": "team-b"}).content.decode()
    )


# --- approving and denying ----------------------------------------------------------------------


def test_approving_from_the_queue_without_javascript_redirects_back(client_as, alice, bob, team_a):
    pending = make_pending(bob, team_a)
    response = client_as(alice).post(
        approve_url(pending), {"comment": "go", "next": f"{QUEUE}?tenant=team-a"}
    )
    assert response.status_code == 302
    assert response["Location"] == f"{QUEUE}?tenant=team-a"
    pending.refresh_from_db()
    assert (pending.state, pending.decided_by, pending.decision_comment) == (
        State.SUBMITTED,
        alice,
        "go",
    )


def test_approving_with_htmx_swaps_the_row_for_its_outcome(client_as, alice, bob, team_a):
    pending = make_pending(bob, team_a)
    response = client_as(alice).post(approve_url(pending), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    content = response.content.decode()
    assert content.strip().startswith(f'<tr id="approval-{pending.pk}"')
    assert "Approved gpu-test1/big-run: it is being applied." in content


def test_an_approval_that_would_exceed_the_quota_is_refused_on_the_row(
    client_as, alice, bob, team_a
):
    pending = make_pending(bob, team_a, devices=9)
    response = client_as(alice).post(approve_url(pending), HTTP_HX_REQUEST="true")
    content = response.content.decode()
    assert 'data-testid="approval-problems"' in content
    assert "raise the quota" in content
    pending.refresh_from_db()
    assert pending.state == State.PENDING_APPROVAL


def test_denying_without_a_comment_is_refused_with_a_message(client_as, alice, bob, team_a):
    pending = make_pending(bob, team_a)
    response = client_as(alice).post(deny_url(pending), {"comment": ""}, follow=True)
    assert "Say why it is denied" in response.content.decode()
    pending.refresh_from_db()
    assert pending.state == State.PENDING_APPROVAL


def test_a_tenant_admin_cannot_reach_another_tenants_request(client_as, alice, carol, team_b):
    theirs = make_pending(carol, team_b, namespace="team-b-prod")
    assert client_as(alice).post(approve_url(theirs)).status_code == 404
    assert client_as(alice).post(deny_url(theirs), {"comment": "no"}).status_code == 404
    theirs.refresh_from_db()
    assert theirs.state == State.PENDING_APPROVAL


def test_a_member_may_not_approve_a_teammates_request(client_as, alice, bob, team_a):
    alices = make_pending(alice, team_a)
    response = client_as(bob).post(approve_url(alices))
    assert response.status_code == 403
    alices.refresh_from_db()
    assert alices.state == State.PENDING_APPROVAL


def test_a_tenant_admin_may_not_approve_her_own_request_but_a_portal_admin_may(
    client_as, alice, root, team_a
):
    own = make_pending(alice, team_a)
    assert (
        "Your own request: another admin decides." in client_as(alice).get(QUEUE).content.decode()
    )
    response = client_as(alice).post(approve_url(own))
    assert response.status_code == 403
    assert "your own request" in response.content.decode()
    client_as(root).post(approve_url(own))
    own.refresh_from_db()
    assert own.state == State.SUBMITTED


# --- the navigation ------------------------------------------------------------------------------


def test_the_navigation_offers_approvals_to_approvers_only(client_as, alice, bob, root):
    def labels(user):
        response = client_as(user).get(reverse("claimrequest-list"))
        return [item["label"] for item in response.context["navigation"]]

    assert "Approvals" in labels(alice)
    assert "Approvals" in labels(root)
    assert "Approvals" not in labels(bob)


def test_the_navigation_badge_counts_the_requests_waiting(client_as, alice, bob, team_a):
    make_pending(bob, team_a, "one")
    make_pending(bob, team_a, "two")
    content = client_as(alice).get(reverse("approval-count")).content.decode()
    assert 'data-testid="approvals-badge"' in content and ">2<" in content
    assert client_as(bob).get(reverse("approval-count")).content.decode().strip() == ""


# --- the request's page --------------------------------------------------------------------------


def test_the_request_page_shows_why_it_waits_and_offers_the_decision_to_admins(
    client_as, alice, bob, team_a
):
    pending = make_pending(bob, team_a)
    url = pending.get_absolute_url()
    as_admin = client_as(alice).get(url).content.decode()
    assert "Waiting for approval" in as_admin
    assert "2 devices of gpu.nvidia.com: more than 1 needs approval." in as_admin
    assert 'data-testid="approval-form"' in as_admin
    as_owner = client_as(bob).get(url).content.decode()
    assert "Waiting for approval" in as_owner
    assert 'data-testid="approval-form"' not in as_owner
    assert "Withdraw" in as_owner


def test_the_request_page_shows_the_decision_and_the_timeline_has_it(client_as, alice, bob, team_a):
    pending = make_pending(bob, team_a)
    url = pending.get_absolute_url()
    response = client_as(alice).post(deny_url(pending), {"comment": "not now", "next": url})
    assert response["Location"] == url
    content = client_as(bob).get(url).content.decode()
    assert 'data-testid="approval-decision"' in content
    assert "Denied by alice" in content
    assert "denied: “not now”" in content  # the timeline


def test_the_owner_withdraws_a_pending_request_and_it_reads_withdrawn(client_as, bob, team_a):
    pending = make_pending(bob, team_a)
    response = client_as(bob).post(
        reverse("claimrequest-release", kwargs={"pk": pending.pk}), {"confirm": "yes"}, follow=True
    )
    content = response.content.decode()
    assert "Withdrew gpu-test1/big-run." in content
    pending.refresh_from_db()
    assert pending.state == State.WITHDRAWN
    assert 'data-state="withdrawn">Withdrawn</span>' in content
    assert "Released" not in content


# --- the New claim form --------------------------------------------------------------------------


@pytest.fixture
def inventory(mirrored_cluster):
    reset_index()
    yield
    reset_index()


FORM = {
    "namespace": "gpu-test1",
    "name": "two-h100",
    "device_class": "gpu.nvidia.com",
    "count": "2",
    "selectors": "",
    "constraint": "",
    "sharing": "claim",
    "lease": "",
}


def test_the_preview_says_a_request_needs_approval_before_it_is_submitted(
    inventory, client_as, bob, team_a
):
    Quota.objects.filter(tenant=team_a).update(approve_above_devices=1)
    response = client_as(bob).post(reverse("claimrequest-preview"), FORM, HTTP_HX_REQUEST="true")
    content = response.content.decode()
    assert 'data-testid="preview-approval"' in content
    assert "2 devices of gpu.nvidia.com: more than 1 needs approval." in content


def test_a_request_over_quota_that_may_ask_is_not_refused_by_the_form(
    inventory, client_as, bob, team_a
):
    Quota.objects.filter(tenant=team_a).update(max_devices=1, approve_over_quota=True)
    preview = client_as(bob).post(reverse("claimrequest-preview"), FORM).content.decode()
    assert 'data-testid="preview-quota"' not in preview  # not "over quota: refused"
    assert "Over quota: Devices: 0 of 1" in preview
    response = client_as(bob).post(reverse("claimrequest-new"), FORM, follow=True)
    assert response.status_code == 200
    assert "is waiting for approval" in response.content.decode()
    request = ClaimRequest.objects.get()
    assert request.state == State.PENDING_APPROVAL
    assert request.expires_at is None


def test_approved_requests_expire_on_their_lease_from_the_approval(client_as, alice, bob, team_a):
    pending = make_pending(bob, team_a)
    ClaimRequest.objects.filter(pk=pending.pk).update(created_at=timezone.now() - timedelta(days=2))
    client_as(alice).post(approve_url(pending))
    pending.refresh_from_db()
    assert pending.expires_at - pending.decided_at == timedelta(days=2)


# --- the Django admin ----------------------------------------------------------------------------


def test_the_admin_shows_the_approval_and_its_action_approves_through_the_service(
    client_as, root, bob, team_a
):
    pending = make_pending(bob, team_a)
    client = client_as(root)
    page = client.get(reverse("admin:claims_claimrequest_change", args=[pending.pk]))
    assert "2 devices of gpu.nvidia.com: more than 1 needs approval." in page.content.decode()
    response = client.post(
        reverse("admin:claims_claimrequest_changelist"),
        {"action": "approve", "_selected_action": [str(pending.pk)]},
        follow=True,
    )
    assert "Approved 1 request(s)." in response.content.decode()
    pending.refresh_from_db()
    assert (pending.state, pending.decided_by) == (State.SUBMITTED, root)


def test_the_queue_costs_the_same_queries_with_more_requests(
    client_as, alice, bob, team_a, django_assert_num_queries
):
    client = client_as(alice)
    make_pending(bob, team_a, "run-a")
    client.get(QUEUE)  # warm the session and the navigation's cache
    # session, user, the gate, the tenants she administers, count, page, the page's tenants'
    # quotas (one query) and their usage (claims, their results, requests: once per tenant)
    with django_assert_num_queries(10):
        assert client.get(QUEUE).status_code == 200
    for index in range(12):
        make_pending(bob, team_a, f"run-{index:02}")
    with django_assert_num_queries(10):
        assert client.get(QUEUE).status_code == 200
