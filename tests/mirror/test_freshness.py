"""Freshness shown honestly: a kind not heard from (event, bookmark or list) for longer than
``MIRROR_STALE_SECONDS`` is stale on the Mirror page, in the API and on the dashboard."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from mirror.models import MirrorStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def heard(settings):
    """``heard(kind, seconds_ago)``: a watching kind last heard from that long ago."""
    settings.MIRROR_STALE_SECONDS = 90

    def make(kind: str, seconds_ago: float | None) -> MirrorStatus:
        seen = None if seconds_ago is None else timezone.now() - timedelta(seconds=seconds_ago)
        return MirrorStatus.objects.create(
            kind=kind, state=MirrorStatus.State.WATCHING, last_seen_at=seen
        )

    return make


def test_freshness_turns_amber_after_the_bound_and_red_after_twice_it(heard):
    assert heard("nodes", 5).freshness == MirrorStatus.Freshness.FRESH
    assert heard("pods", 100).freshness == MirrorStatus.Freshness.STALE
    assert heard("namespaces", 200).freshness == MirrorStatus.Freshness.VERY_STALE
    assert heard("deviceclasses", None).freshness == MirrorStatus.Freshness.VERY_STALE
    stale = set(MirrorStatus.objects.stale().values_list("kind", flat=True))
    assert stale == {"pods", "namespaces", "deviceclasses"}


def test_the_mirror_page_flags_stale_kinds_in_a_fixed_number_of_queries(
    client_as, root, heard, django_assert_num_queries
):
    heard("nodes", 3)
    heard("resourceclaims", 100)
    heard("resourceslices", 400)
    client = client_as(root)
    # session, user, the statuses, one row count per mirrored kind (7)
    with django_assert_num_queries(10):
        response = client.get("/mirror/")
    content = response.content.decode()
    assert 'data-testid="stale-alert"' in content and "alert-danger" in content
    assert "Not heard from the cluster for over 90 s" in content
    assert 'data-freshness="stale"' in content and 'data-freshness="very_stale"' in content
    assert re.search(r">10\d s ago<", content)
    assert ">6\xa0minutes ago<" in content  # 400 s
    assert re.search(r">[345] s ago<", content)


def test_a_fresh_mirror_page_has_no_alert(client_as, root, heard):
    heard("nodes", 3)
    content = client_as(root).get("/mirror/").content.decode()
    assert 'data-testid="stale-alert"' not in content
    assert 'data-freshness="fresh"' in content


def test_the_api_says_which_kinds_are_stale(api_as, root, heard):
    heard("nodes", 3)
    heard("pods", 100)
    body = api_as(root).get("/api/v1/mirror-status/").json()
    rows = {row["kind"]: row for row in body.get("results", body)}
    assert rows["nodes"]["is_stale"] is False and rows["nodes"]["freshness"] == "fresh"
    assert rows["pods"]["is_stale"] is True and rows["pods"]["freshness"] == "stale"
    assert 99 < rows["pods"]["seconds_since_seen"] < 110
    assert rows["pods"]["last_seen_at"]


def test_the_api_schema_documents_freshness(api_as, root):
    schema = api_as(root).get("/api/schema/").content.decode()
    assert "is_stale" in schema and "very_stale" in schema and "seconds_since_seen" in schema


@pytest.mark.parametrize("persona", ["alice", "root"])
def test_the_dashboard_warns_everyone_but_links_only_for_staff(
    client_as, personas, persona, heard, mirrored_cluster
):
    heard("resourceclaims", 100)
    content = client_as(personas[persona]).get("/").content.decode()
    assert 'data-testid="stale-mirror"' in content
    assert "resourceclaims" in content
    assert ('href="/mirror/"' in content) is (persona == "root")


def test_a_fresh_mirror_puts_no_warning_on_the_dashboard(client_as, alice, heard, mirrored_cluster):
    heard("resourceclaims", 1)
    assert b'data-testid="stale-mirror"' not in client_as(alice).get("/").content
