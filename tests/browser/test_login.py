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


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_token_form_error_is_shown_in_the_form(
    browser_page, sign_in, live_server, alice, artifacts_dir
):
    page = browser_page
    sign_in(page, "alice")
    page.wait_for_selector("h1:has-text('Dashboard')")
    page.goto(f"{live_server.url}/account/tokens/")
    with page.expect_response(lambda response: response.status == 422):
        page.click("button:has-text('Create token')")  # no name: the server answers 422
    error = page.wait_for_selector("#token-panel .invalid-feedback")
    assert error.is_visible()
    assert error.inner_text() == "This field is required."
    assert "is-invalid" in (page.get_attribute("input[name=name]", "class") or "")
    assert page.url == f"{live_server.url}/account/tokens/"  # swapped in place, no reload
    page.screenshot(path=artifacts_dir / "api-token-error.png", full_page=True)
