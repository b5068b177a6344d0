"""Idle claims in a real browser: the Idle claims list and a claim page's Idle section, with
screenshots for review (``IDLE_SHOTS_DIR`` to save them elsewhere too)."""

from __future__ import annotations

import datetime
import os
import shutil
from pathlib import Path

import pytest
from django.utils import timezone

from claims.usage.idle import sweep_idle_claims
from harness.fixtures import fixture_objects
from mirror.store import load
from portal.models import IdlePolicy
from tests.claims.idle_helpers import OTHER_CLAIM, TEAM_A_CLAIM, utilisation

HOUR = datetime.timedelta(hours=1)
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _load_cluster_with_an_unused_claim() -> None:
    """The fixture cluster as the mirror stores it, team-a's claim without its pod."""
    objects = fixture_objects()
    for item in objects:
        metadata = item["metadata"]
        if (
            item["kind"] == "ResourceClaim"
            and (
                metadata.get("namespace"),
                metadata["name"],
            )
            == TEAM_A_CLAIM
        ):
            item["status"].pop("reservedFor", None)
    load(objects)


def _keep(artifacts_dir: Path, name: str) -> None:
    target = os.environ.get("IDLE_SHOTS_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(artifacts_dir / name, Path(target) / name)


def test_a_tenant_admin_sees_idle_claims_and_why(
    browser_page, sign_in, live_server, alice, team_a, artifacts_dir
):
    IdlePolicy.objects.create(tenant=team_a, reclaim=True, grace_period=24 * HOUR)
    _load_cluster_with_an_unused_claim()
    now = timezone.now()
    utilisation(OTHER_CLAIM, [3.0, 1.5, 0.0, 2.5] * 12, now=now)
    sweep_idle_claims(now=now - datetime.timedelta(hours=3))
    sweep_idle_claims(now=now)

    page = browser_page
    sign_in(page, "alice")
    page.wait_for_url(f"{live_server.url}/")

    page.goto(f"{live_server.url}/claims/usage/idle/")
    rows = page.locator("#idle-claim-table tbody tr")
    assert rows.count() == 2
    assert page.get_by_text("no consumer since").is_visible()
    assert page.get_by_text("under 5 % GPU utilisation since").is_visible()
    page.screenshot(path=artifacts_dir / "idle-list.png", full_page=True)
    _keep(artifacts_dir, "idle-list.png")

    page.get_by_role("link", name=TEAM_A_CLAIM[1]).click()
    page.wait_for_url(f"**/claims/{TEAM_A_CLAIM[0]}/{TEAM_A_CLAIM[1]}/")
    assert page.locator("[data-testid=idle-badge]").is_visible()
    assert (
        page.locator("[data-testid=idle-reclaim]").inner_text().startswith("Reclaim scheduled at")
    )
    page.screenshot(path=artifacts_dir / "idle-claim-no-consumer.png", full_page=True)
    _keep(artifacts_dir, "idle-claim-no-consumer.png")

    page.goto(f"{live_server.url}/claims/{OTHER_CLAIM[0]}/{OTHER_CLAIM[1]}/")
    assert page.locator("[data-testid=claim-idle]").is_visible()
    page.screenshot(path=artifacts_dir / "idle-claim-low-utilisation.png", full_page=True)
    _keep(artifacts_dir, "idle-claim-low-utilisation.png")


def test_a_member_of_another_tenant_sees_an_empty_list(
    browser_page, sign_in, live_server, carol, artifacts_dir
):
    _load_cluster_with_an_unused_claim()
    now = timezone.now()
    sweep_idle_claims(now=now - datetime.timedelta(hours=3))
    sweep_idle_claims(now=now)

    page = browser_page
    sign_in(page, "carol")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/claims/usage/idle/")
    assert page.get_by_text("No idle claims").is_visible()
    page.screenshot(path=artifacts_dir / "idle-list-empty.png", full_page=True)
    _keep(artifacts_dir, "idle-list-empty.png")
