"""A person signs in and reaches the dashboard (desktop and phone widths)."""

from __future__ import annotations

import pytest


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_member_signs_in_and_reaches_the_dashboard(
    browser_page, sign_in, live_server, alice, artifacts_dir
):
    page = browser_page
    sign_in(page, "alice")
    page.wait_for_selector("h1:has-text('Dashboard')")
    assert page.url == f"{live_server.url}/"
    assert page.locator("text=No cluster connected yet").is_visible()
    assert page.locator("[data-testid=user-menu]").inner_text().strip() == "alice"
    page.screenshot(path=artifacts_dir / "dashboard.png", full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    page.screenshot(path=artifacts_dir / "dashboard-phone.png", full_page=True)
    assert page.locator(".navbar-toggler").is_visible()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_wrong_password_is_explained(browser_page, sign_in, live_server, alice, artifacts_dir):
    page = browser_page
    sign_in(page, "alice", "wrong password")
    page.wait_for_selector(".alert-danger")
    assert "correct username and password" in page.locator(".alert-danger").inner_text()
    page.screenshot(path=artifacts_dir / "login-error.png")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_user_creates_an_api_token_without_a_page_reload(
    browser_page, sign_in, live_server, alice, artifacts_dir
):
    page = browser_page
    sign_in(page, "alice")
    page.wait_for_selector("h1:has-text('Dashboard')")
    page.goto(f"{live_server.url}/account/tokens/")
    page.fill("input[name=name]", "CI pipeline")
    page.click("button:has-text('Create token')")
    token = page.wait_for_selector("#new-token")
    assert token.input_value().startswith("drap_")
    assert page.locator("td:has-text('CI pipeline')").is_visible()
    page.screenshot(path=artifacts_dir / "api-tokens.png", full_page=True)
