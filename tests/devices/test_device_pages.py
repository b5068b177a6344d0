"""Device pages: the filterable inventory and one device with who holds it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from devices.models import Device

pytestmark = pytest.mark.django_db


def h100_gpu0() -> Device:
    return Device.objects.get(node_name="dgx-h100-01", name="gpu-0", driver="gpu.nvidia.com")


@pytest.mark.parametrize("persona", ["alice", "bob", "carol", "root"])
def test_every_signed_in_user_sees_devices(client_as, personas, mirrored_cluster, persona):
    client = client_as(personas[persona])
    assert client.get("/devices/").status_code == 200
    assert client.get(f"/devices/{h100_gpu0().pk}/").status_code == 200


def test_anonymous_visitors_are_sent_to_sign_in(client, mirrored_cluster):
    for url in ("/devices/", f"/devices/{h100_gpu0().pk}/"):
        assert client.get(url)["Location"].startswith("/login/")


def test_the_device_list_shows_fifty_per_page(client_as, alice, mirrored_cluster):
    response = client_as(alice).get("/devices/")
    table = response.context["table"]
    assert table.paginator.count == Device.objects.count()
    assert len(table.page.object_list) == 50
    assert b"Page 1 of" in response.content


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("driver=gpu.example.com", 8),
        ("model=NVIDIA+H100+80GB+HBM3", 16),
        ("node=dgx-h100-02", 10),
        ("device_class=gpu.example.com", 8),
        ("q=0000:1b:00.0&node=dgx-h100-01", 1),
        ("q=GPU-becccfc8", 1),
        ("state=tainted", 1),
        ("state=allocated&node=dgx-h100-01", 3),
        ("state=blocked&node=dgx-a100-01", 44),
    ],
)
def test_the_device_list_filters(client_as, alice, mirrored_cluster, query, expected):
    response = client_as(alice).get(f"/devices/?{query}")
    assert response.context["table"].paginator.count == expected


def test_a_device_class_filter_means_devices_its_selectors_accept(
    client_as, alice, mirrored_cluster
):
    client = client_as(alice)
    mig = client.get("/devices/?device_class=mig.nvidia.com").context["table"].paginator.count
    gpus = client.get("/devices/?device_class=gpu.nvidia.com").context["table"].paginator.count
    # The A100's 8 GPUs each offer 25 MIG placements; full GPUs: 16 H100 + 8 A100.
    assert mig == Device.objects.filter(device_type="mig").count() == 200
    assert gpus == Device.objects.filter(driver="gpu.nvidia.com", device_type="gpu").count() == 24
    vfio = client.get("/devices/?device_class=vfio.gpu.nvidia.com")
    assert vfio.context["table"].paginator.count == 0  # no VFIO devices are published
    unknown = client_as(alice).get("/devices/?device_class=nope")
    assert unknown.context["table"].paginator.count == 0


def test_the_device_list_filters_with_htmx(client_as, alice, mirrored_cluster):
    response = client_as(alice).get("/devices/?state=allocated", HTTP_HX_REQUEST="true")
    content = response.content.decode()
    assert "<html" not in content
    assert 'id="device-table"' in content
    assert "badge state-allocated" in content
    assert "badge state-free" not in content


def test_the_device_list_query_count_does_not_grow_with_the_page(
    client_as, root, mirrored_cluster, django_assert_max_num_queries
):
    client = client_as(root)
    client.get("/devices/")  # the filter form's choices are cached after the first view
    with CaptureQueriesContext(connection) as five_rows:
        assert len(client.get("/devices/?node=dgx-h100-01&q=gpu-").context["table"].page) == 8
    with CaptureQueriesContext(connection) as fifty_rows:
        assert len(client.get("/devices/").context["table"].page) == 50
    assert len(five_rows) == len(fifty_rows)
    with django_assert_max_num_queries(8):
        client.get("/devices/")


def test_the_device_list_says_when_the_mirror_has_not_synced(client_as, alice):
    content = client_as(alice).get("/devices/").content.decode()
    assert "No cluster data yet: the mirror has not synced" in content


def test_teammates_see_which_claim_holds_a_device(client_as, alice, bob, mirrored_cluster):
    for user in (alice, bob):
        content = client_as(user).get(f"/devices/{h100_gpu0().pk}/").content.decode()
        assert "gpu-test1/pod1-gpu-nscrq" in content
        assert "/claims/gpu-test1/pod1-gpu-nscrq/" in content
        assert "pod1" in content


def test_another_tenant_learns_only_that_a_device_is_held(client_as, carol, mirrored_cluster):
    content = client_as(carol).get(f"/devices/{h100_gpu0().pk}/").content.decode()
    assert "Held by a claim in another tenant" in content
    assert "pod1-gpu-nscrq" not in content
    assert "gpu-test1" not in content
    assert "pod1" not in content


def test_admin_access_holders_are_listed_separately(client_as, root, mirrored_cluster):
    device = Device.objects.get(driver="gpu.example.com", name="gpu-0")
    response = client_as(root).get(f"/devices/{device.pk}/")
    assert [h.claim.name for h in response.context["admin_holders"]] == ["pod0-admin-gpu-z7wjx"]
    assert all(not h.result.admin_access for h in response.context["holders"])


def test_a_device_page_shows_capacity_published_and_humanised(client_as, alice, mirrored_cluster):
    content = client_as(alice).get(f"/devices/{h100_gpu0().pk}/").content.decode()
    assert "81559Mi" in content
    assert "79.6 GiB" in content
    assert "resource.kubernetes.io/pciBusID" in content
    assert "Raw JSON" in content
    assert "gpu.nvidia.com</a>" in content  # its device classes


def test_a_mig_device_links_to_its_parent_and_its_counters(client_as, alice, mirrored_cluster):
    device = Device.objects.get(node_name="dgx-a100-01", name="gpu-0-mig-1g10gb-15-0")
    parent = Device.objects.get(node_name="dgx-a100-01", name="gpu-0")
    content = client_as(alice).get(f"/devices/{device.pk}/").content.decode()
    assert f'href="/devices/{parent.pk}/">gpu-0</a>' in content
    assert "gpu-0-counter-set" in content
    assert "memory-slice-0" in content


def test_an_unknown_device_is_404(client_as, alice, mirrored_cluster):
    assert client_as(alice).get("/devices/999999/").status_code == 404


def test_with_many_nodes_the_node_filter_is_a_text_field(
    client_as, alice, mirrored_cluster, monkeypatch
):
    monkeypatch.setattr("devices.views.devices.NODE_SELECT_LIMIT", 2)
    content = client_as(alice).get("/devices/?node=dgx-h100-01").content.decode()
    assert 'type="search" name="node" placeholder="Node name" value="dgx-h100-01"' in content
    assert '<option value="dgx-a100-01"' not in content
