"""The widest lists fit a laptop screen: at 1366 to 1400 px the node list (six counts beside
the GPU models) and the device list show every column, nothing clipped behind a scrollbar."""

from __future__ import annotations

import pytest

from tests.devices.cluster_data import load_fixture_cluster

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OVERFLOW = """() => [...document.querySelectorAll('.table-responsive')]
    .map(box => box.scrollWidth - box.clientWidth)"""


@pytest.mark.parametrize("width", [1366, 1400])
def test_the_node_and_device_lists_show_every_column(
    browser_page, sign_in, live_server, root, artifacts_dir, width
):
    load_fixture_cluster()
    page = browser_page
    page.set_viewport_size({"width": width, "height": 768})
    sign_in(page, "root")
    page.wait_for_url(f"{live_server.url}/")
    for path, table in (("/nodes/", "#node-table"), ("/devices/", "#device-table")):
        page.goto(f"{live_server.url}{path}")
        page.wait_for_selector(f"{table} tbody tr")
        assert page.evaluate(OVERFLOW) == [0], path
        name = path.strip("/")
        page.screenshot(path=artifacts_dir / f"{name}-list-{width}.png")
