"""The fragmentation advisor's pages, the node page's panel and the API: inventory every
signed-in user reads, unknown nodes 404, a fixed number of queries, kept per index version."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from django.test import override_settings

from claims.capacity.fragmentation_reads import cluster_advice, node_advice
from claims.capacity.index import Placement, index, reset_index
from mirror.store import load

pytestmark = pytest.mark.django_db
A100 = "dgx-a100-01"


@pytest.fixture
def inventory(mirrored_cluster, settings):
    settings.FRAGMENTATION_BUDGET_MS = 600_000  # a loaded test machine still answers whole
    reset_index()
    yield
    reset_index()


@pytest.mark.parametrize("persona", ["alice", "bob", "carol", "root"])
def test_every_signed_in_user_sees_what_still_fits(client_as, personas, inventory, persona):
    client = client_as(personas[persona])
    page = client.get("/fragmentation/")
    assert page.status_code == 200
    assert b"gpu.nvidia.com: largest allocatable set on one node: 6 GPUs on dgx-a100-01." in (
        page.content
    )
    assert client.get(f"/fragmentation/nodes/{A100}/").status_code == 200


def test_anonymous_visitors_are_sent_to_sign_in_and_the_api_refuses_them(client, inventory):
    for url in ("/fragmentation/", f"/fragmentation/nodes/{A100}/"):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/login/")
    for url in ("/api/v1/fragmentation/", f"/api/v1/fragmentation/nodes/{A100}/"):
        assert client.get(url).status_code in (401, 403)


def test_an_unknown_node_is_a_404(client_as, api_as, bob, inventory):
    assert client_as(bob).get("/fragmentation/nodes/no-such-node/").status_code == 404
    assert api_as(bob).get("/api/v1/fragmentation/nodes/no-such-node/").status_code == 404


def test_the_cluster_page_shows_each_profile_per_node(client_as, bob, inventory):
    content = client_as(bob).get("/fragmentation/").content.decode()
    # gpu-0 and gpu-1 of the A100 are carved full by the demo's MIG claims; six GPUs are free.
    assert (
        "mig.nvidia.com: 6 GPUs on dgx-a100-01 each have room for a 1g.5gb, 1g.5gb+me, "
        "1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb or 7g.40gb." in content
    )
    assert 'aria-label="mig.nvidia.com"' in content
    assert f'href="/nodes/{A100}/"' in content
    assert 'data-testid="fragmentation-cost"' in content


def test_the_node_panel_is_a_fragment_for_htmx_and_a_page_otherwise(client_as, bob, inventory):
    client = client_as(bob)
    fragment = client.get(f"/fragmentation/nodes/{A100}/", HTTP_HX_REQUEST="true")
    assert b"<html" not in fragment.content
    assert b'data-testid="node-fragmentation"' in fragment.content
    assert b"6 GPUs each have room for a 1g.5gb" in fragment.content
    assert fragment["Vary"] == "HX-Request" or "HX-Request" in fragment["Vary"]
    page = client.get(f"/fragmentation/nodes/{A100}/")
    assert b"<html" in page.content and b'data-testid="node-fragmentation"' in page.content


def test_the_node_page_loads_the_panel_with_a_link_to_fall_back_on(client_as, bob, inventory):
    content = client_as(bob).get("/nodes/dgx-h100-02/").content.decode()
    assert 'hx-get="/fragmentation/nodes/dgx-h100-02/" hx-trigger="load"' in content
    assert 'href="/fragmentation/nodes/dgx-h100-02/"' in content


def test_a_node_without_gpus_says_there_is_nothing_to_advise_on(client_as, bob, inventory):
    content = client_as(bob).get("/fragmentation/nodes/gpu-legacy-01/").content.decode()
    assert "Nothing to advise on" in content


def test_the_pages_cost_a_fixed_number_of_queries(
    client_as, root, inventory, django_assert_num_queries
):
    client = client_as(root)
    # Build the index and the answer; the index's first catch-up reads back over the change
    # log the mirror wrote before it was built.
    client.get("/fragmentation/")
    client.get("/fragmentation/")
    # session, user, the index's catch-up (changes since its cursor, reservations assumed)
    with django_assert_num_queries(4):
        client.get("/fragmentation/")
    # … and whether the node is known (its Node row)
    with django_assert_num_queries(5):
        client.get(f"/fragmentation/nodes/{A100}/", HTTP_HX_REQUEST="true")


def test_the_api_returns_the_same_answers_as_the_page(api_as, carol, inventory):
    client = api_as(carol)
    body = client.get("/api/v1/fragmentation/").json()
    report = cluster_advice()
    assert body["sentences"] == report.sentences
    assert body["allocations"] == report.allocations
    shapes = {entry["shape"]["key"]: entry for entry in body["shapes"]}
    assert shapes["mig.nvidia.com:1g.5gb"]["nodes"] == [{"node": A100, "fits": 42}]
    assert shapes["gpu.nvidia.com:8"]["nodes"] == []
    node = client.get(f"/api/v1/fragmentation/nodes/{A100}/").json()
    assert node["node"] == A100
    assert node["sentences"] == node_advice(A100).sentences
    mig = next(entry for entry in node["classes"] if entry["device_class"] == "mig.nvidia.com")
    smallest = mig["fits"][0]
    assert smallest["shape"]["profile"] == "1g.5gb"
    assert smallest["shape"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] == [
        {"cel": {"expression": 'device.attributes["gpu.nvidia.com"].profile == "1g.5gb"'}}
    ]
    assert (smallest["fits"], smallest["allocatable"], len(smallest["gpus"])) == (42, True, 6)


def test_each_node_is_asked_about_again_only_when_its_usage_changes(inventory):
    cluster_advice()  # the index's first catch-up reloads the classes: answers start over
    first = cluster_advice()
    second = cluster_advice()
    assert second.allocations == first.allocations
    assert all(a is b for a, b in zip(first.nodes, second.nodes, strict=True))
    assert node_advice(A100) is first.nodes[0]
    # A reservation in flight on the A100 (whole gpu-2) changes what fits there, only there.
    allocation = {
        "devices": {
            "results": [
                {"request": "r", "driver": "gpu.nvidia.com", "pool": A100, "device": "gpu-2"}
            ]
        }
    }
    index().assume("held", Placement(allocation=allocation, node=A100))
    changed = cluster_advice()
    assert changed.nodes[0] is not first.nodes[0]
    assert "5 GPUs each have room for a 1g.5gb" in changed.nodes[0].sentences[1]
    assert all(a is b for a, b in zip(first.nodes[1:], changed.nodes[1:], strict=True))
    assert node_advice(A100) is changed.nodes[0]
    index().forget("held")
    assert "6 GPUs each have room" in node_advice(A100).sentences[1]
    # The index rebuilt from the same slices and usage: the answers stand.
    index().rebuild()
    rebuilt = cluster_advice()
    assert rebuilt.allocations == first.allocations
    assert all(a is b for a, b in zip(first.nodes[1:], rebuilt.nodes[1:], strict=True))


def test_out_of_time_the_cluster_answer_lists_the_nodes_left_and_goes_on_later(
    client_as, bob, inventory
):
    reset_index()  # a new index: every answer is asked for again
    partial = cluster_advice(budget=0)
    assert partial.nodes == [] and len(partial.pending) == 4 and not partial.is_complete
    assert partial.sentences == []  # nothing found to fit yet, and nothing known not to
    content = client_as(bob).get("/fragmentation/").content.decode()
    assert 'data-testid="fragmentation-pending"' not in content  # the default budget suffices
    reset_index()
    with override_settings(FRAGMENTATION_BUDGET_MS=0):
        page = client_as(bob).get("/fragmentation/").content.decode()
    assert 'data-testid="fragmentation-pending"' in page
    assert "Still asking the allocator about 4 nodes" in page
    assert cluster_advice().is_complete


def test_a_device_class_whose_selectors_change_is_answered_afresh(inventory):
    cluster_advice()
    before = cluster_advice()
    assert "gpu.nvidia.com" in [entry.device_class for entry in before.nodes[0].classes]
    path = Path(__file__).resolve().parents[2] / "devices" / "fixtures" / "deviceclasses.json"
    raw = next(
        item
        for item in json.loads(path.read_text())["items"]
        if item["metadata"]["name"] == "gpu.nvidia.com"
    )
    narrowed = copy.deepcopy(raw)
    narrowed["metadata"]["resourceVersion"] = "99999999"
    narrowed["spec"]["selectors"].append(
        {"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName.contains('H100')"}}
    )
    load([narrowed])
    after = cluster_advice()
    a100 = next(node for node in after.nodes if node.node == A100)
    assert [entry.device_class for entry in a100.classes] == ["mig.nvidia.com"]
