"""The sharing page in a real browser, as a portal admin (the widest navigation)."""

from __future__ import annotations

import pytest

from tests.devices.cluster_data import load_fixture_cluster

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_portal_admin_reviews_who_shares_what(
    browser_page, sign_in, live_server, root, artifacts_dir
):
    load_fixture_cluster()
    page = browser_page
    sign_in(page, "root")
    page.wait_for_url(f"{live_server.url}/")
    page.get_by_role("button", name="Usage").click()  # the navigation's dropdown
    page.get_by_role("link", name="Sharing").click()
    page.wait_for_url("**/sharing/")
    assert (
        page.locator("[data-testid=sharing-pods]").get_by_text("gpu-test3/single-gpu").is_visible()
    )
    page.screenshot(path=artifacts_dir / "sharing-pods.png", full_page=True)
    page.click("[data-testid=tab-configs]")
    page.wait_for_url("**/sharing/?tab=configs")
    assert page.get_by_text("defaultPinnedDeviceMemoryLimit").is_visible()
    page.screenshot(path=artifacts_dir / "sharing-configs.png", full_page=True)
    page.click("[data-testid=tab-observers]")
    page.wait_for_url("**/sharing/?tab=observers")
    assert page.get_by_text("admin-access/pod0-admin-gpu-z7wjx").is_visible()
    page.screenshot(path=artifacts_dir / "sharing-observers.png", full_page=True)
