"""The cluster-mirror pages in a real browser, with screenshots for review."""

from __future__ import annotations

import pytest

from devices.models import Device
from tests.devices.cluster_data import load_fixture_cluster

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_portal_admin_browses_nodes_and_devices(
    browser_page, sign_in, live_server, root, artifacts_dir
):
    load_fixture_cluster()
    page = browser_page
    sign_in(page, "root")
    page.wait_for_url(f"{live_server.url}/")

    page.goto(f"{live_server.url}/nodes/")
    assert page.locator("#node-table").get_by_text("8 × NVIDIA H100 80GB HBM3").count() == 2
    page.screenshot(path=artifacts_dir / "mirror-node-list.png", full_page=True)

    page.goto(f"{live_server.url}/nodes/dgx-a100-01/")
    page.locator("tr.partitions details summary").first.click()
    assert page.get_by_text("gpu-0-mig-1g10gb-15-0").first.is_visible()
    page.screenshot(path=artifacts_dir / "mirror-node-detail-a100.png", full_page=True)
    page.locator("tr.partitions details").first.scroll_into_view_if_needed()
    page.screenshot(path=artifacts_dir / "mirror-node-detail-a100-partitions.png")

    page.goto(f"{live_server.url}/devices/")
    page.select_option("select[name=node]", "dgx-h100-01")
    page.wait_for_url("**/devices/?*node=dgx-h100-01*")
    page.wait_for_function(
        "() => document.querySelectorAll('#device-table tbody tr').length === 10"
    )
    # the export follows the filters, and the table polls with them
    assert "node=dgx-h100-01" in page.locator("[data-testid=export]").get_attribute("href")
    assert "node=dgx-h100-01" in page.locator("#device-table").get_attribute("hx-get")
    page.screenshot(path=artifacts_dir / "mirror-device-list.png", full_page=True)

    device = Device.objects.get(node_name="dgx-h100-01", name="gpu-0", driver="gpu.nvidia.com")
    page.goto(f"{live_server.url}{device.get_absolute_url()}")
    assert page.url.endswith("/devices/gpu.nvidia.com/dgx-h100-01/gpu-0/")
    assert page.get_by_text("gpu-test1/pod1-gpu-nscrq").is_visible()
    page.screenshot(path=artifacts_dir / "mirror-device-detail.png", full_page=True)


def test_a_member_sees_the_cluster_on_the_dashboard(
    browser_page, sign_in, live_server, alice, artifacts_dir
):
    load_fixture_cluster()
    page = browser_page
    sign_in(page, "alice")
    page.wait_for_url(f"{live_server.url}/")
    assert page.get_by_text("No cluster connected yet").count() == 0
    assert page.get_by_text("NVIDIA H100 80GB HBM3").first.is_visible()
    page.screenshot(path=artifacts_dir / "dashboard-cluster.png", full_page=True)

    page.goto(f"{live_server.url}/device-classes/mig.nvidia.com/")
    assert page.locator("[data-testid=matching-devices]").inner_text() == "200"
    page.screenshot(path=artifacts_dir / "mirror-device-class.png", full_page=True)
