"""Node pages: every node with its devices counted, and one node's slices and partitions."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from devices.models import Device, Node, TelemetrySource
from devices.telemetry.ingest import ingest_source

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("persona", ["alice", "bob", "carol", "root"])
def test_every_signed_in_user_sees_the_inventory(client_as, personas, mirrored_cluster, persona):
    client = client_as(personas[persona])
    assert client.get("/nodes/").status_code == 200
    assert client.get("/nodes/dgx-h100-01/").status_code == 200


def test_anonymous_visitors_are_sent_to_sign_in(client, mirrored_cluster):
    for url in ("/nodes/", "/nodes/dgx-h100-01/"):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/login/")


def test_the_node_list_counts_gpus_by_model_and_legacy_resources(
    client_as, carol, mirrored_cluster
):
    content = client_as(carol).get("/nodes/").content.decode()
    assert content.count("8 × NVIDIA H100 80GB HBM3") == 2
    assert "8 × NVIDIA A100-SXM4-40GB" in content  # MIG placements are not counted as GPUs
    assert "8 × LATEST-GPU-MODEL" in content
    assert "nvidia.com/gpu</code>: 4" in content


def test_the_node_list_query_count_does_not_grow_with_nodes(
    client_as, root, mirrored_cluster, django_assert_num_queries
):
    client = client_as(root)
    with CaptureQueriesContext(connection) as one_node:
        client.get("/nodes/?q=legacy")
    with CaptureQueriesContext(connection) as all_nodes:
        client.get("/nodes/")
    assert len(one_node) == len(all_nodes)
    # session, user, orphan node names, count, page, DRA GPUs by model, device-plugin GPUs
    with django_assert_num_queries(7):
        client.get("/nodes/")
    with django_assert_num_queries(7):
        client.get("/nodes/?ready=true", HTTP_HX_REQUEST="true")


def test_a_node_page_costs_a_fixed_number_of_queries(
    client_as, root, mirrored_cluster, django_assert_num_queries
):
    client = client_as(root)
    # session, user, node, slices, devices, counter sets, readings
    with django_assert_num_queries(7):
        client.get("/nodes/dgx-a100-01/")
    ingest_source(TelemetrySource.objects.create(name="demo", kind="simulated"))
    # … and the node's last 24 h once it has readings, however many devices it has: its
    # rollups, and its last two buckets from the raw samples
    with django_assert_num_queries(9):
        client.get("/nodes/dgx-h100-01/")
    with django_assert_num_queries(9):
        client.get("/nodes/dgx-a100-01/")
    # the live fragment: session, user, node, slices, devices
    with django_assert_num_queries(5):
        client.get("/nodes/dgx-a100-01/", HTTP_HX_REQUEST="true")


def test_legacy_device_plugin_gpus_are_counted_by_model(client_as, carol, mirrored_cluster):
    response = client_as(carol).get("/nodes/?q=legacy")
    assert response.context["table"].gpu_models == {"gpu-legacy-01": [("Tesla T4", 4)]}
    assert "4 × Tesla T4" in response.content.decode()
    node = client_as(carol).get("/nodes/gpu-legacy-01/").content.decode()
    assert "4 × Tesla T4" in node


def test_node_counts_by_state_match_the_device_list_and_add_up(client_as, root, mirrored_cluster):
    client = client_as(root)
    rows = {row.record.name: row.record for row in client.get("/nodes/").context["table"].rows}
    for name, node in rows.items():
        states = ("free", "allocated", "shared", "blocked", "tainted")
        assert sum(getattr(node, f"{state}_count") for state in states) == node.device_count
        for state in states:
            listed = client.get(f"/devices/?node={name}&state={state}").context["table"]
            assert listed.paginator.count == getattr(node, f"{state}_count"), (name, state)
    assert rows["dgx-a100-01"].blocked_count == 44  # GPUs and partitions whose counters are taken


def test_the_node_list_refreshes_itself_with_its_filters(client_as, bob, mirrored_cluster):
    page = client_as(bob).get("/nodes/?q=h100").content.decode()
    assert 'hx-get="/nodes/?q=h100"' in page
    poll = client_as(bob).get("/nodes/?q=h100", HTTP_HX_REQUEST="true").content.decode()
    assert poll.lstrip().startswith('<div id="node-table"')
    assert "dgx-a100-01" not in poll


def test_the_node_page_refreshes_its_devices_and_keeps_partitions_open(
    client_as, bob, mirrored_cluster
):
    page = client_as(bob).get("/nodes/dgx-a100-01/").content.decode()
    assert 'id="node-devices" hx-get="/nodes/dgx-a100-01/"' in page
    assert "data-keep-open" in page  # portal.js keeps opened partitions open (browser-tested)
    fragment = client_as(bob).get("/nodes/dgx-a100-01/", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment
    assert "Labels" not in fragment
    assert "25 partitions of gpu-0" in fragment


def test_the_node_list_filters_with_htmx(client_as, bob, mirrored_cluster):
    response = client_as(bob).get("/nodes/?q=h100", HTTP_HX_REQUEST="true")
    content = response.content.decode()
    assert "<html" not in content
    assert "dgx-h100-01" in content
    assert "dgx-a100-01" not in content
    assert response["Vary"] == "HX-Request" or "HX-Request" in response["Vary"]


def test_the_node_list_says_when_the_mirror_has_not_synced(client_as, alice):
    content = client_as(alice).get("/nodes/").content.decode()
    assert "No cluster data yet: the mirror has not synced" in content


def test_devices_of_a_node_without_a_node_object_are_listed_and_browsable(
    client_as, alice, mirrored_cluster
):
    Node.objects.filter(name="dgx-h100-02").delete()
    content = client_as(alice).get("/nodes/").content.decode()
    assert 'data-testid="orphan-nodes"' in content
    assert "/nodes/dgx-h100-02/" in content
    detail = client_as(alice).get("/nodes/dgx-h100-02/")
    assert detail.status_code == 200
    assert b"No Node object" in detail.content


def test_an_unknown_node_is_404(client_as, alice, mirrored_cluster):
    assert client_as(alice).get("/nodes/no-such-node/").status_code == 404


def test_a_node_page_shows_labels_conditions_and_slices(client_as, alice, mirrored_cluster):
    content = client_as(alice).get("/nodes/dgx-h100-01/").content.decode()
    assert "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3" in content
    assert "KubeletReady" in content
    assert "00000-gpu.nvidia.com-dgx-h100-01-p9lts" in content
    assert "00000-compute-domain.nvidia.com-dgx-h100-01-djvnk" in content
    assert "79.6 GiB" in content


def test_mig_partitions_are_shown_inside_their_parent_gpu(client_as, alice, mirrored_cluster):
    response = client_as(alice).get("/nodes/dgx-a100-01/")
    content = response.content.decode()
    groups = {g.resource_slice.name: g for g in response.context["slices"]}
    gpu0 = next(
        item for group in groups.values() for item in group.groups if item.device.name == "gpu-0"
    )
    assert len(gpu0.partitions) == 25
    assert all(p.parent_uuid == gpu0.device.uuid for p in gpu0.partitions)
    top_level = [item.device.name for g in groups.values() for item in g.groups]
    assert not any("-mig-" in name for name in top_level)
    assert "25 partitions of gpu-0" in content
    assert "gpu-0-counter-set" in content  # the pool's shared counters
    assert "publishes only shared counters" in content


def test_the_legacy_node_shows_its_device_plugin_gpus(client_as, alice, mirrored_cluster):
    content = client_as(alice).get("/nodes/gpu-legacy-01/").content.decode()
    assert "nvidia.com/gpu</code>: 4" in content
    assert "No ResourceSlices for this node" in content
    assert Device.objects.filter(node_name="gpu-legacy-01").count() == 0


def test_a_node_page_shows_its_gpus_readings(client_as, bob, mirrored_cluster):
    page = client_as(bob).get("/nodes/dgx-h100-01/").content.decode()
    assert "No reading from this node" in page

    ingest_source(TelemetrySource.objects.create(name="demo", kind="simulated"))
    page = client_as(bob).get("/nodes/dgx-h100-01/").content.decode()

    assert 'data-testid="node-utilisation"' in page and ">simulated<" in page
    assert page.count('aria-label="GPU utilisation of gpu-') == 8
