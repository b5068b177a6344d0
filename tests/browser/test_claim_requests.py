"""Self-service claims in a real browser: bob asks for two H100s on one NUMA node, watches the
preview, submits, sees the devices, releases; carol cannot see his claim.

The demo's GPUs publish no NVLink clique attribute (a DGX H100's eight GPUs share one NVSwitch
fabric, and the driver publishes no clique for it), so that preset is offered disabled with the
reason, and bob keeps his pair together on a NUMA node (each H100 has a PCIe root of its own)."""

from __future__ import annotations

import re

import pytest

from claims.models import ClaimRequest, ClassPolicy

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
H100 = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"'


def test_bob_requests_two_h100s_on_one_numa_node_and_releases_them(
    browser_page, sign_in, live_server, live, bob, carol, artifacts_dir
):
    _, _, resync = live
    ClassPolicy.objects.create(device_class_name="gpu.nvidia.com", mode="reservation")
    page = browser_page
    sign_in(page, "bob")
    page.wait_for_url(f"{live_server.url}/")
    page.screenshot(path=artifacts_dir / "claims-dashboard-usage.png", full_page=True)

    page.get_by_role("link", name="New claim").first.click()
    page.wait_for_url("**/claims/requests/new/")
    page.select_option("select[name=namespace]", "gpu-test1")
    page.fill("input[name=name]", "two-h100")
    page.select_option("select[name=device_class]", "gpu.nvidia.com")
    page.select_option("select[name=count]", "2")
    page.fill("textarea[name=selectors]", H100)
    page.wait_for_selector("[data-testid=preview-matching]")
    page.wait_for_function(
        "() => "
        "document.querySelector('[data-testid=preview-matching]')?.innerText.includes('16 devices')"
    )
    assert page.locator("#constraint-nvlink").is_disabled()
    page.check("#constraint-numa")
    fit = page.locator("[data-testid=preview-fit]")
    fit.wait_for()
    page.wait_for_function(
        "() => "
        "document.querySelector('[data-testid=preview-fit]')?.innerText.includes('fit now on')"
    )
    assert "It would fit now" in fit.inner_text()
    page.screenshot(path=artifacts_dir / "claims-new-preview.png", full_page=True)

    # a selector asking 80Gi of 81559Mi devices explains itself
    page.fill(
        "textarea[name=selectors]",
        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0',
    )
    page.wait_for_function(
        "() => "
        "document.querySelector('[data-testid=preview-hints]')?.innerText.includes('79.6 GiB')"
    )
    page.screenshot(path=artifacts_dir / "claims-new-preview-80gi.png", full_page=True)
    page.fill("textarea[name=selectors]", H100)
    page.wait_for_function(
        "() => "
        "document.querySelector('[data-testid=preview-fit]')?.innerText.includes('fit now on')"
    )

    page.click("[data-testid=submit-claim]")
    page.wait_for_url(re.compile(r".*/claims/requests/[0-9a-f-]{36}/$"))
    claim_request = ClaimRequest.objects.get(name="two-h100")
    assert claim_request.state == ClaimRequest.State.APPLIED, claim_request.reason
    assert page.locator("[data-testid=allocated-device]").count() == 2
    assert claim_request.node_name.startswith("dgx-h100-")
    assert "Applied" in page.locator("[data-testid=request-state]").inner_text()
    page.screenshot(path=artifacts_dir / "claims-request-applied.png", full_page=True)
    detail_url = page.url

    resync()
    page.goto(f"{live_server.url}/claims/requests/")
    assert page.locator("#claimrequest-table").get_by_text("two-h100").is_visible()
    page.screenshot(path=artifacts_dir / "claims-my-claims.png", full_page=True)

    page.goto(detail_url)
    page.click("[data-testid=release]")  # asks first, in place, saying what goes back
    confirm = page.locator("[data-testid=release-confirm]")
    confirm.wait_for()
    assert "Freed: 2 devices on dgx-h100-" in confirm.inner_text()
    claim_request.refresh_from_db()
    assert claim_request.state == ClaimRequest.State.APPLIED
    page.screenshot(path=artifacts_dir / "claims-release-confirm.png", full_page=True)
    page.click("[data-testid=confirm-release]")
    page.wait_for_url(detail_url)
    page.wait_for_selector("[data-testid=request-state]")
    claim_request.refresh_from_db()
    assert claim_request.state in (ClaimRequest.State.RELEASING, ClaimRequest.State.RELEASED)
    page.screenshot(path=artifacts_dir / "claims-request-released.png", full_page=True)

    page.context.clear_cookies()
    sign_in(page, "carol")
    page.wait_for_url(f"{live_server.url}/")
    response = page.goto(detail_url)
    assert response is not None and response.status == 404


def test_a_pending_claim_explains_why(
    browser_page, sign_in, live_server, live, root, artifacts_dir
):
    page = browser_page
    sign_in(page, "root")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/claims/gpu-memory/big-memory-gpu/")
    why = page.locator("[data-testid=why-pending]")
    assert "blocks here" in why.inner_text()
    assert "matching the selectors" in why.inner_text()
    assert "81559Mi (79.6 GiB)" in why.inner_text()  # what the H100s publish, next to 80Gi
    page.screenshot(path=artifacts_dir / "claims-why-pending.png", full_page=True)
