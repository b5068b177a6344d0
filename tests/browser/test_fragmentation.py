"""The fragmentation advisor in a real browser: the cluster page, and the node page's panel
loaded by htmx, on the demo cluster with the A100 carved further. Screenshots for review."""

from __future__ import annotations

import pytest

from claims.capacity.index import reset_index
from mirror.store import load
from tests.devices.cluster_data import load_fixture_cluster

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
A100 = "dgx-a100-01"
# gpu-2..4 keep one compute slice (a 4g.20gb and a 2g.10gb taken), gpu-5 half (a 3g.20gb
# taken), gpu-6 is allocated whole; gpu-7 stays free.
CARVED = [f"gpu-{n}-mig-{p}" for n in (2, 3, 4) for p in ("4g20gb-5-0", "2g10gb-14-4")] + [
    "gpu-5-mig-3g20gb-9-0",
    "gpu-6",
]


def _carve() -> None:
    results = [
        {"request": f"r{index}", "driver": "gpu.nvidia.com", "pool": A100, "device": device}
        for index, device in enumerate(CARVED)
    ]
    load(
        [
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {
                    "name": "carved",
                    "namespace": "gpu-test4",
                    "uid": "5d0e6f3c-0000-4000-8000-00000000ca7e",
                    "resourceVersion": "9000001",
                    "creationTimestamp": "2026-09-15T10:00:00Z",
                },
                "spec": {"devices": {"requests": []}},
                "status": {"allocation": {"devices": {"results": results}}},
            }
        ]
    )


def test_bob_sees_what_still_fits_cluster_wide_and_on_the_a100(
    browser_page, sign_in, live_server, bob, artifacts_dir
):
    load_fixture_cluster()
    _carve()
    reset_index()
    page = browser_page
    sign_in(page, "bob")
    page.wait_for_url(f"{live_server.url}/")

    page.goto(f"{live_server.url}/fragmentation/")
    summary = page.locator("[data-testid=fragmentation-summary]")
    # gpu-7 alone is free: the only GPU left for the two largest profiles.
    assert "1 GPU on dgx-a100-01 for a 4g.20gb or 7g.40gb." in summary.inner_text()
    page.screenshot(path=artifacts_dir / "fragmentation-cluster.png", full_page=True)

    page.goto(f"{live_server.url}/nodes/{A100}/")
    panel = page.locator("[data-testid=node-fragmentation]")
    panel.wait_for()  # loaded by htmx once the page is up
    assert (
        "5 GPUs each have room for a 1g.5gb, 1g.5gb+me or 1g.10gb; 2 GPUs for a 2g.10gb or "
        "3g.20gb; 1 GPU for a 4g.20gb or 7g.40gb." in panel.inner_text()
    )
    card = page.locator("[data-testid=node-fragmentation-card]")
    card.scroll_into_view_if_needed()
    card.screenshot(path=artifacts_dir / "fragmentation-node-a100.png")

    page.goto(f"{live_server.url}/fragmentation/nodes/dgx-h100-02/")
    assert "Largest allocatable set on this node: 4 GPUs (of 8)." in page.inner_text("main")
    page.screenshot(path=artifacts_dir / "fragmentation-node-h100.png", full_page=True)
