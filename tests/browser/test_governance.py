"""Running a tenant in a real browser: bob's request for three H100s waits for approval, alice
approves it from the queue (the row updates in place) and it is applied in the cluster; her
quota page shows the usage bars and the report page its chart."""

from __future__ import annotations

from datetime import timedelta

import pytest

from claims.models import ClaimRequest, ClassPolicy
from claims.requests.services import submit_request
from claims.requests.specs import ClaimInput
from portal.models import Quota

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_alice_approves_bobs_request_from_the_queue_and_it_is_applied(
    browser_page, sign_in, live_server, live, alice, bob, team_a, artifacts_dir
):
    _, _, resync = live
    ClassPolicy.objects.create(device_class_name="gpu.nvidia.com", mode="reservation")
    Quota.objects.filter(tenant=team_a, device_class_name="gpu.nvidia.com").update(
        approve_above_devices=2
    )
    request = submit_request(
        user=bob,
        claim=ClaimInput(
            namespace="gpu-test1",
            name="three-h100",
            device_class_name="gpu.nvidia.com",
            count=3,
            lease=timedelta(days=1),
        ),
    )
    assert request.state == ClaimRequest.State.PENDING_APPROVAL

    page = browser_page
    sign_in(page, "alice")
    page.wait_for_url(f"{live_server.url}/")
    approvals = page.get_by_role("link", name="Approvals")
    approvals.wait_for()
    page.wait_for_function(  # the count badge, loaded by htmx after the page
        "() => "
        "document.querySelector('nav a[href=\"/approvals/\"]')?.innerText.trim().endsWith('1')"
    )
    approvals.click()
    page.wait_for_url("**/approvals/")
    assert "more than 2 need approval" in page.locator("main").inner_text()
    page.screenshot(path=artifacts_dir / "governance-approvals.png", full_page=True)

    page.fill("input[name=comment]", "Go ahead.")
    page.get_by_role("button", name="Approve").click()
    page.wait_for_function(
        "() => document.querySelector('main')?.innerText.includes('Approved by alice')"
    )
    request.refresh_from_db()
    assert request.state in (ClaimRequest.State.ALLOCATING, ClaimRequest.State.APPLIED)
    assert request.decided_by == alice and request.decision_comment == "Go ahead."
    resync()
    request.refresh_from_db()
    assert request.state == ClaimRequest.State.APPLIED

    page.goto(f"{live_server.url}/tenants/team-a/quotas/")
    usage = page.locator("[data-testid=usage-devices]").first.inner_text()
    assert usage.replace("\n", " ").strip() == "5 / 8"  # the fixtures' 2 H100s and bob's 3
    page.screenshot(path=artifacts_dir / "governance-quotas.png", full_page=True)

    page.goto(f"{live_server.url}/reports/?period=last-7-days&group_by=namespace")
    assert page.locator("svg title").count() >= 1
    assert "gpu-test1" in page.locator("main").inner_text()
    page.screenshot(path=artifacts_dir / "governance-report.png", full_page=True)
