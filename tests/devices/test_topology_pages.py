"""A node's topology page: who may see it, what it links to, and what it costs."""

from __future__ import annotations

import pytest

from devices.models import Device, TelemetrySource
from devices.telemetry.ingest import ingest_source

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("persona", ["alice", "bob", "carol", "root"])
def test_every_signed_in_user_sees_a_nodes_topology(client_as, personas, mirrored_cluster, persona):
    response = client_as(personas[persona]).get("/nodes/dgx-h100-01/topology/")
    assert response.status_code == 200
    assert response.content.decode().count('class="topo-gpu"') == 8


def test_anonymous_visitors_are_sent_to_sign_in(client, mirrored_cluster):
    response = client.get("/nodes/dgx-h100-01/topology/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_an_unknown_node_is_404(client_as, alice, mirrored_cluster):
    assert client_as(alice).get("/nodes/no-such-node/topology/").status_code == 404


def test_the_node_page_links_its_topology(client_as, alice, mirrored_cluster):
    content = client_as(alice).get("/nodes/dgx-a100-01/").content.decode()
    assert 'href="/nodes/dgx-a100-01/topology/"' in content


def test_boxes_link_to_devices_and_to_the_claims_the_user_may_see(
    client_as, bob, carol, mirrored_cluster
):
    device = Device.objects.get(node_name="dgx-h100-01", name="gpu-0", driver="gpu.nvidia.com")
    claim_url = "/claims/gpu-test1/pod1-gpu-nscrq/"
    mine = client_as(bob).get("/nodes/dgx-h100-01/topology/").content.decode()
    assert f'href="{device.get_absolute_url()}"' in mine
    assert f'href="{claim_url}"' in mine
    # another tenant learns that it is held, not by which claim
    theirs = client_as(carol).get("/nodes/dgx-h100-01/topology/").content.decode()
    assert f'href="{device.get_absolute_url()}"' in theirs
    assert claim_url not in theirs
    assert "pod1-gpu-nscrq" not in theirs
    assert "held by a claim in another tenant" in theirs


def test_mig_partitions_are_drawn_with_their_placements_and_titles(
    client_as, root, mirrored_cluster
):
    content = client_as(root).get("/nodes/dgx-a100-01/topology/").content.decode()
    assert content.count('class="topo-partition"') == 200
    assert "gpu-0-mig-3g20gb-9-4 · 3g.20gb · memory slices 4–7 · Allocated" in content
    assert "gpu-0-mig-1g5gb-19-6 · 1g.5gb · memory slice 6 · Blocked" in content
    assert "Memory slices used by held devices: 8 / 8" in content
    assert "SMs used by held devices: 98 / 98" in content
    assert "/claims/gpu-test4/pod-7c9d5b8f6d-4xq2m-mig-devices-rssk6/" in content
    # each MIG GPU links the claim holding its partitions
    assert content.count('class="topo-claim"') == 2
    assert content.count("4 of 25 placements held") == 2


def test_nodes_without_topology_do_not_break(client_as, alice, mirrored_cluster):
    client = client_as(alice)
    example = client.get("/nodes/dra-example-driver-cluster-worker/topology/").content.decode()
    assert "NUMA node unknown" in example
    assert "PCIe root unknown" in example
    legacy = client.get("/nodes/gpu-legacy-01/topology/")
    assert legacy.status_code == 200
    assert "No DRA devices on this node" in legacy.content.decode()


def test_utilisation_is_shown_and_its_absence_says_no_data(client_as, root, mirrored_cluster):
    client = client_as(root)
    before = client.get("/nodes/dgx-h100-01/topology/").content.decode()
    assert before.count(">no data</text>") == 8
    assert "no utilisation readings" in before
    ingest_source(TelemetrySource.objects.create(name="demo", kind="simulated"))
    after = client.get("/nodes/dgx-h100-01/topology/").content.decode()
    assert after.count(">no data</text>") == 0
    assert "simulated utilisation" in after
    assert 'class="topo-shade' in after


def test_the_live_fragment_is_the_topology_alone(client_as, alice, mirrored_cluster):
    response = client_as(alice).get("/nodes/dgx-h100-01/topology/", HTTP_HX_REQUEST="true")
    content = response.content.decode()
    assert "<html" not in content
    assert 'data-testid="topology-svg"' in content


def test_a_topology_page_costs_a_fixed_number_of_queries(
    client_as, bob, root, mirrored_cluster, django_assert_num_queries
):
    ingest_source(TelemetrySource.objects.create(name="demo", kind="simulated"))
    for user in (bob, root):
        client = client_as(user)
        client.get("/nodes/dgx-h100-01/topology/")  # warms the navigation's cached role
        # session, user, node, devices, their results, visible claims, counter sets, readings
        with django_assert_num_queries(8):
            client.get("/nodes/dgx-h100-01/topology/")
        with django_assert_num_queries(8):
            client.get("/nodes/dgx-a100-01/topology/")
        with django_assert_num_queries(8):
            client.get("/nodes/dgx-a100-01/topology/", HTTP_HX_REQUEST="true")


def test_published_text_is_escaped_in_the_drawing(client_as, alice, mirrored_cluster):
    Device.objects.filter(node_name="dgx-h100-01", name="gpu-2").update(
        model_name='<script>alert("x")</script>', state_reason="a & b"
    )
    content = client_as(alice).get("/nodes/dgx-h100-01/topology/").content.decode()
    assert "<script>alert" not in content
    assert "&lt;script&gt;alert(&quot;x&quot;)" in content
    assert "a &amp; b" in content
