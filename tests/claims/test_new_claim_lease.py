"""The lease on New claim and My claims: in plain sight, an empty lease that needs no
approval where the tenant sends long leases to approval, and what a pending request asked."""

from __future__ import annotations

from datetime import timedelta
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from claims.capacity.index import reset_index
from claims.models import ClaimRequest
from tests.claims.conftest import make_pending, policy

pytestmark = pytest.mark.django_db

FORM = {
    "namespace": "gpu-test1",
    "name": "one-h100",
    "device_class": "gpu.nvidia.com",
    "count": "1",
    "selectors": "",
    "constraint": "",
    "sharing": "claim",
    "lease": "",
}


@pytest.fixture
def inventory(mirrored_cluster):
    reset_index()
    yield
    reset_index()


class _Collapsed(HTMLParser):
    """Records whether the input named ``lease`` sits inside a ``<details>``."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.lease_in_details: bool | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "details":
            self.depth += 1
        if tag == "input" and dict(attrs).get("name") == "lease":
            self.lease_in_details = self.depth > 0

    def handle_endtag(self, tag):
        if tag == "details":
            self.depth -= 1


def test_the_lease_field_is_not_hidden_in_a_collapsed_section(client_as, bob, team_a):
    parser = _Collapsed()
    parser.feed(client_as(bob).get(reverse("claimrequest-new")).content.decode())
    assert parser.lease_in_details is False


def test_an_empty_lease_is_the_longest_that_needs_no_approval_and_the_form_says_so(
    inventory, client_as, bob, team_a
):
    policy(team_a, max_lease=timedelta(days=7), approve_above_lease=timedelta(days=3))
    response = client_as(bob).post(reverse("claimrequest-preview"), FORM, HTTP_HX_REQUEST="true")
    content = response.content.decode()
    assert (
        "Empty: 3d. A lease longer than 3d waits for approval by Team A&#x27;s admins "
        "(at most 7d)." in content
    )
    assert 'id="lease-hint"' in content and 'hx-swap-oob="true"' in content
    assert "Lease <strong>3d</strong> (the default)" in content
    assert "no approval needed" in content
    assert 'data-testid="preview-approval"' not in content


def test_a_lease_over_the_threshold_says_on_the_preview_that_it_needs_approval(
    inventory, client_as, bob, team_a
):
    policy(team_a, max_lease=timedelta(days=7), approve_above_lease=timedelta(days=3))
    response = client_as(bob).post(reverse("claimrequest-preview"), {**FORM, "lease": "5d"})
    content = response.content.decode()
    assert "Lease <strong>5d</strong>, from when it is approved." in content
    assert "A lease of 5d: leases longer than 3d need approval." in content


def test_submitting_with_an_empty_lease_is_applied_without_approval(
    inventory, client_as, bob, team_a
):
    policy(team_a, max_lease=timedelta(days=7), approve_above_lease=timedelta(days=3))
    response = client_as(bob).post(reverse("claimrequest-new"), FORM)
    assert response.status_code == 302
    request = ClaimRequest.objects.get(name="one-h100")
    assert request.lease == timedelta(days=3)
    assert request.state != ClaimRequest.State.PENDING_APPROVAL
    assert request.approval_reasons == []


def test_my_claims_shows_the_lease_a_pending_request_asked_for(client_as, bob, team_a):
    make_pending(bob, team_a, lease=timedelta(days=5))
    content = client_as(bob).get(reverse("claimrequest-list")).content.decode()
    assert "5d from approval" in content
    assert "no lease" not in content
