"""Free counts in a real browser: the New claim preview counts a GPU whose partitions are in use
as not free, and for partitions that do not all fit it says both numbers; the device class
pages say what Free means (issue 22, item 5)."""

from __future__ import annotations

import pytest

from mirror.classes import refresh_class_matches

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
ONE_G_ME = 'device.attributes["gpu.nvidia.com"].profile == "1g.5gb+me"'


@pytest.fixture(autouse=True)
def _no_time_budget(settings):
    settings.CLAIMS_PREVIEW_FIT_BUDGET_MS = 600_000


def test_bob_sees_the_same_free_counts_in_the_preview_as_on_the_class_pages(
    browser_page, sign_in, live_server, live, bob, artifacts_dir
):
    refresh_class_matches()  # what the watchers schedule once slices and classes are in
    page = browser_page
    sign_in(page, "bob")
    page.wait_for_url(f"{live_server.url}/")

    page.goto(f"{live_server.url}/claims/requests/new/")
    page.select_option("select[name=namespace]", "gpu-test1")
    page.fill("input[name=name]", "free-counts")
    page.select_option("select[name=device_class]", "gpu.nvidia.com")
    page.wait_for_function(
        "() => "
        "document.querySelector('[data-testid=preview-matching]')?.innerText.includes('24 devices')"
    )
    matching = page.locator("[data-testid=preview-matching]").inner_text()
    assert "15 are free now" in matching
    rows = page.locator("[data-testid=preview-nodes] tbody tr").all_inner_texts()
    assert any(row.split() == ["dgx-a100-01", "8", "6"] for row in rows), rows
    page.screenshot(path=artifacts_dir / "free-counts-preview-gpus.png", full_page=True)

    page.select_option("select[name=device_class]", "mig.nvidia.com")
    page.fill("textarea[name=selectors]", ONE_G_ME)
    # The class's own preview (all 200 partitions) may land first: wait for the selector's.
    page.wait_for_function(
        "() => (() => { const m = document.querySelector('[data-testid=preview-matching]');"
        " return m && !m.innerText.startsWith('200 devices')"
        " && document.querySelector('[data-testid=preview-fit-together]'); })()"
    )
    assert "42 are free now" in page.locator("[data-testid=preview-matching]").inner_text()
    together = page.locator("[data-testid=preview-fit-together]").inner_text()
    assert "6 of the 42 fit together" in together
    page.screenshot(path=artifacts_dir / "free-counts-preview-mig.png", full_page=True)

    page.goto(f"{live_server.url}/device-classes/")
    note = page.locator("[data-testid=membership-note]").inner_text()
    assert "a claim for exactly that device would get it now" in note
    page.screenshot(path=artifacts_dir / "free-counts-device-classes.png", full_page=True)

    page.goto(f"{live_server.url}/device-classes/mig.nvidia.com/")
    assert "not all fit at once" in page.locator("[data-testid=free-share-counters]").inner_text()
    page.screenshot(path=artifacts_dir / "free-counts-device-class-mig.png", full_page=True)
