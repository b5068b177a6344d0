"""An ended request holds nothing: its page lists no devices, in particular none as "written by
the portal, not mirrored yet" (the reservation it once wrote is history, in its timeline)."""

from __future__ import annotations

import pytest

from claims.models import ClaimRequest
from tests.claims.test_request_pages import make_request

pytestmark = pytest.mark.django_db

WRITTEN = {
    "devices": {
        "results": [
            {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "dgx-a100-01", "device": d}
            for d in ("gpu-2", "gpu-3")
        ]
    }
}


@pytest.mark.parametrize(
    "state", [ClaimRequest.State.RELEASED, ClaimRequest.State.EXPIRED, ClaimRequest.State.FAILED]
)
def test_an_ended_reservation_lists_no_devices(client_as, bob, team_a, state):
    claim_request = make_request(
        bob,
        team_a,
        state=state,
        allocation=WRITTEN,
        reason="its claim was deleted from the cluster outside the portal",
    )
    body = client_as(bob).get(claim_request.get_absolute_url()).content.decode()
    assert "not mirrored yet" not in body
    assert 'data-testid="allocated-device"' not in body
    assert ">0 devices<" in body
    assert "The claim no longer holds devices." in body
