"""A renewal over team-a's lease threshold in a real browser: bob renews his 2-hour claim to
7 days from its page, it waits (the lease runs on), alice approves it from the queue."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.claims.conftest import make_held

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_bob_renews_past_the_threshold_and_alice_approves_the_renewal(
    browser_page, sign_in, live_server, alice, bob, team_a, artifacts_dir
):
    held = make_held(bob, team_a)
    page = browser_page
    sign_in(page, "bob")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}{held.get_absolute_url()}")
    page.fill("input[name=lease]", "7d")
    page.click("[data-testid=renew]")
    page.locator("[data-testid=renewal-pending]").wait_for()
    assert "waits for approval" in page.locator("main").inner_text()
    held.refresh_from_db()
    assert held.lease == timedelta(hours=2) and held.renewal_lease == timedelta(days=7)
    page.screenshot(path=artifacts_dir / "renewal-waiting.png", full_page=True)

    page.context.clear_cookies()
    sign_in(page, "alice")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/approvals/")
    row = page.locator("[data-testid=approval-row][data-kind=renewal]")
    assert "lease 2h → 7d from approval" in row.inner_text()
    page.screenshot(path=artifacts_dir / "renewal-queue.png", full_page=True)
    page.get_by_role("button", name="Approve").click()
    page.wait_for_function(
        "() => document.querySelector('main')?.innerText.includes('Approved the renewal of')"
    )
    held.refresh_from_db()
    assert held.lease == timedelta(days=7) and not held.has_pending_renewal
