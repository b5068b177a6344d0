"""Releasing (or withdrawing) from the request's page is a confirmation step that says what
goes back to the pool: in place with htmx, a page of its own without JavaScript; one click
releases nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from claims.models import ClaimRequest
from tests.claims.conftest import make_pending

pytestmark = pytest.mark.django_db
State = ClaimRequest.State
WRITTEN = {
    "devices": {
        "results": [
            {"request": "devices", "driver": "gpu.nvidia.com", "pool": "dgx-h100-01", "device": d}
            for d in ("gpu-0", "gpu-1")
        ]
    }
}


@pytest.fixture
def reservation(bob, team_a):
    """bob's reservation of two H100s, written by the portal (not mirrored yet)."""
    return ClaimRequest.objects.create(
        tenant=team_a,
        namespace="gpu-test1",
        name="two-h100",
        device_class_name="gpu.nvidia.com",
        mode="reservation",
        form={"count": 2},
        spec={"devices": {"requests": []}},
        state=State.APPLIED,
        held_devices=2,
        requested_by=bob,
        allocation=WRITTEN,
        node_name="dgx-h100-01",
        lease=timedelta(days=1),
        expires_at=timezone.now() + timedelta(days=1),
    )


def release_url(request):
    return reverse("claimrequest-release", kwargs={"pk": request.pk})


def test_the_confirmation_says_which_devices_go_back_to_the_pool(client_as, reservation, bob):
    content = client_as(bob).get(release_url(reservation)).content.decode()
    assert "Release this claim?" in content
    assert "Freed: 2 devices on dgx-h100-01" in content
    assert "dgx-h100-01/gpu-0" in content and "dgx-h100-01/gpu-1" in content
    assert 'name="confirm" value="yes"' in content
    reservation.refresh_from_db()
    assert reservation.state == State.APPLIED


def test_one_click_releases_nothing_it_asks_first(client_as, reservation, bob):
    response = client_as(bob).post(release_url(reservation))
    assert response.status_code == 200
    assert 'data-testid="release-confirm"' in response.content.decode()
    reservation.refresh_from_db()
    assert reservation.state == State.APPLIED


def test_confirming_releases_the_claim(client_as, reservation, bob):
    response = client_as(bob).post(release_url(reservation), {"confirm": "yes"}, follow=True)
    assert "Releasing gpu-test1/two-h100." in response.content.decode()
    reservation.refresh_from_db()
    assert reservation.state == State.RELEASING


def test_with_htmx_the_confirmation_opens_in_place_on_the_request_page(client_as, reservation, bob):
    client = client_as(bob)
    page = client.get(reservation.get_absolute_url()).content.decode()
    url = release_url(reservation)
    assert f'href="{url}" hx-get="{url}" hx-target="#release-confirm"' in page
    assert 'id="release-confirm"' in page
    assert "#release-confirm [data-testid=release-form]" in page  # the poll leaves it open
    fragment = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert fragment.strip().startswith('<section class="card border-danger')
    assert "<html" not in fragment


def test_withdrawing_a_pending_request_is_confirmed_too(client_as, bob, team_a):
    pending = make_pending(bob, team_a)
    content = client_as(bob).get(release_url(pending)).content.decode()
    assert "Withdraw this request?" in content
    assert "nothing is allocated and nothing exists in the cluster" in content
    client_as(bob).post(release_url(pending), {"confirm": "yes"})
    pending.refresh_from_db()
    assert pending.state == State.WITHDRAWN


def test_teammates_and_other_tenants_cannot_open_the_confirmation(
    client_as, reservation, alice, carol
):
    assert client_as(carol).get(release_url(reservation)).status_code == 404
    assert client_as(alice).get(release_url(reservation)).status_code == 200  # her tenant's admin
