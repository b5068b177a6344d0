"""A node's topology in a real browser: the DGX H100 and the A100 with MIG, screenshots kept."""

from __future__ import annotations

import pytest

from devices.models import TelemetrySource
from devices.telemetry.ingest import ingest_source
from tests.devices.cluster_data import load_fixture_cluster

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_member_reads_the_topology_of_a_dgx_and_a_mig_node(
    browser_page, sign_in, live_server, bob, artifacts_dir
):
    load_fixture_cluster()
    ingest_source(TelemetrySource.objects.create(name="demo", kind="simulated"))
    page = browser_page
    sign_in(page, "bob")
    page.wait_for_url(f"{live_server.url}/")

    page.goto(f"{live_server.url}/nodes/dgx-h100-01/")
    page.click("[data-testid=node-topology-link]")
    page.wait_for_url("**/nodes/dgx-h100-01/topology/")
    svg = page.locator("[data-testid=topology-svg]")
    assert svg.locator("g.topo-gpu").count() == 8
    assert svg.locator("g.topo-numa").count() == 2
    assert svg.locator("g.topo-pcie").count() == 8
    # bob's team holds gpu-0 through gpu-test1/pod1-gpu-nscrq: the box links to the claim
    gpu0 = svg.locator("g.topo-gpu[data-device=gpu-0]")
    assert gpu0.get_attribute("data-state") == "allocated"
    gpu0.locator("a.topo-claim").click()
    page.wait_for_url("**/claims/gpu-test1/pod1-gpu-nscrq/")
    page.go_back()
    page.locator("[data-testid=topology-svg]").wait_for()
    page.screenshot(path=artifacts_dir / "topology-dgx-h100.png", full_page=True)

    page.goto(f"{live_server.url}/nodes/dgx-a100-01/topology/")
    svg = page.locator("[data-testid=topology-svg]")
    assert svg.locator("g.topo-gpu").count() == 8
    gpu0 = svg.locator("g.topo-gpu[data-device=gpu-0]")
    assert gpu0.locator("a.topo-partition").count() == 25
    held = gpu0.locator("a.topo-partition[data-state=allocated]")
    assert held.count() == 4
    # a partition links to its device page
    gpu0.locator("a.topo-partition[data-device=gpu-0-mig-3g20gb-9-4]").click()
    page.wait_for_url("**/devices/gpu.nvidia.com/dgx-a100-01/gpu-0-mig-3g20gb-9-4/")
    page.go_back()
    page.locator("[data-testid=topology-svg]").wait_for()
    page.screenshot(path=artifacts_dir / "topology-a100-mig.png", full_page=True)
    page.locator("g.topo-gpu[data-device=gpu-0]").scroll_into_view_if_needed()
    page.locator("g.topo-gpu[data-device=gpu-0]").screenshot(
        path=artifacts_dir / "topology-a100-mig-gpu0.png"
    )

    page.goto(f"{live_server.url}/nodes/dra-example-driver-cluster-worker/topology/")
    assert page.locator("[data-testid=topology-svg] g.topo-gpu").count() == 8
    labels = page.locator("[data-testid=topology-svg] g.topo-frame > text").all_text_contents()
    assert labels == ["NUMA node unknown", "PCIe root unknown", "NVLink clique unknown"]
    page.screenshot(path=artifacts_dir / "topology-example-driver.png", full_page=True)
