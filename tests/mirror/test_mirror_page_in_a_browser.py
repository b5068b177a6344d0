"""The Mirror page in a stale state, in a real browser, with a screenshot for review."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from mirror.models import MirrorStatus
from tests.browser.conftest import browser_page, sign_in  # noqa: F401 - shared fixtures
from tests.devices.cluster_data import load_fixture_cluster

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_portal_admin_sees_which_kinds_are_stale(
    browser_page,  # noqa: F811
    sign_in,  # noqa: F811
    live_server,
    root,
    artifacts_dir,
    settings,
):
    settings.MIRROR_STALE_SECONDS = 90
    load_fixture_cluster()
    now = timezone.now()
    for kind, silent, events in [
        ("deviceclasses", 4, 6),
        ("namespaces", 12, 40),
        ("nodes", 7, 15),
        ("pods", 30, 212),
        ("resourceclaims", 130, 98),
        ("resourceclaimtemplates", 2, 3),
        ("resourceslices", 600, 1540),
    ]:
        MirrorStatus.objects.create(
            kind=kind,
            state=MirrorStatus.State.WATCHING,
            resource_version=str(4377000 + events),
            events_total=events,
            relists_total=1,
            last_seen_at=now - timedelta(seconds=silent),
            last_event_at=now - timedelta(seconds=silent),
            last_list_at=now - timedelta(minutes=14),
            lag_seconds=0.04,
        )
    MirrorStatus.objects.filter(kind="resourceslices").update(
        state=MirrorStatus.State.BACKING_OFF,
        error_count=3,
        last_error="Unreachable: GET /apis/resource.k8s.io/v1/resourceslices: connection refused",
        last_error_at=now,
    )
    page = browser_page
    sign_in(page, "root")
    page.wait_for_url(f"{live_server.url}/")
    assert page.get_by_test_id("stale-mirror").is_visible()
    page.screenshot(path=artifacts_dir / "dashboard-mirror-stale.png", full_page=True)

    page.get_by_role("link", name="See the Mirror page").click()
    page.wait_for_url(f"{live_server.url}/mirror/")
    assert page.get_by_test_id("stale-alert").is_visible()
    assert page.locator("[data-freshness=very_stale]").count() == 1
    assert page.locator("[data-freshness=stale]").count() == 1
    page.screenshot(path=artifacts_dir / "mirror-stale.png", full_page=True)
