"""The mirror's health page: portal admins only."""

from __future__ import annotations

import pytest

from devices.models import Node
from mirror.models import MirrorStatus

pytestmark = pytest.mark.django_db


def test_anonymous_visitors_are_sent_to_sign_in(client):
    assert client.get("/mirror/")["Location"].startswith("/login/")


@pytest.mark.parametrize("persona", ["alice", "bob", "carol"])
def test_it_is_forbidden_to_everyone_but_portal_admins(client_as, personas, persona):
    assert client_as(personas[persona]).get("/mirror/").status_code == 403


def test_it_says_when_watchers_have_not_started(client_as, root):
    content = client_as(root).get("/mirror/").content.decode()
    assert "Watchers have not started yet" in content


def test_it_shows_each_watcher_and_live_row_counts(client_as, root, mirrored_cluster):
    MirrorStatus.objects.create(
        kind="resourceslices",
        state=MirrorStatus.State.WATCHING,
        resource_version="4377886",
        events_total=42,
        relists_total=2,
        error_count=1,
        last_error="410 Gone: too old resource version",
        lag_seconds=0.25,
    )
    Node.objects.filter(name="gpu-legacy-01").update(problems=["status is missing"])
    response = client_as(root).get("/mirror/")
    content = response.content.decode()
    assert "Watchers have not started yet" not in content
    assert "4377886" in content
    assert "410 Gone" in content
    assert "0.25 s" in content
    kinds = {row.kind: row for row in response.context["kinds"]}
    assert kinds["nodes"].rows == 5
    assert kinds["nodes"].malformed == 1
    assert kinds["resourceslices"].rows == 15
    assert kinds["resourceclaims"].rows == 13


def test_the_page_refreshes_its_status_fragment_by_itself(client_as, root, db):
    MirrorStatus.objects.create(kind="nodes", state=MirrorStatus.State.WATCHING)
    client = client_as(root)
    page = client.get("/mirror/").content.decode()
    assert 'id="mirror-status"' in page and 'hx-trigger="every 10s' in page
    fragment = client.get("/mirror/", headers={"HX-Request": "true"})
    body = fragment.content.decode()
    assert "<html" not in body and "Watchers" in body and "nodes" in body
    assert fragment["Vary"].endswith("HX-Request") or "HX-Request" in fragment["Vary"]
