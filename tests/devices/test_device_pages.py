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
    assert client.get(h100_gpu0().get_absolute_url()).status_code == 200


def test_anonymous_visitors_are_sent_to_sign_in(client, mirrored_cluster):
    for url in ("/devices/", h100_gpu0().get_absolute_url()):
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
    client_as, root, mirrored_cluster, django_assert_num_queries
):
    client = client_as(root)
    client.get("/devices/")  # the filter form's choices are cached after the first view
    with CaptureQueriesContext(connection) as five_rows:
        assert len(client.get("/devices/?node=dgx-h100-01&q=gpu-").context["table"].page) == 8
    with CaptureQueriesContext(connection) as fifty_rows:
        assert len(client.get("/devices/").context["table"].page) == 50
    assert len(five_rows) == len(fifty_rows)
    # session, user, count, page
    with django_assert_num_queries(4):
        client.get("/devices/")
    with django_assert_num_queries(4):
        client.get("/devices/?state=free&page=2", HTTP_HX_REQUEST="true")


def test_a_device_page_costs_a_fixed_number_of_queries(
    client_as, root, mirrored_cluster, django_assert_num_queries
):
    client = client_as(root)
    a100 = Device.objects.get(node_name="dgx-a100-01", name="gpu-0").get_absolute_url()
    h100 = h100_gpu0().get_absolute_url()
    # session, user, device + slice, results, visible claims, consumers, pods, latest
    # reading, partitions, device classes
    with django_assert_num_queries(10):
        assert client.get(h100).status_code == 200
    # the same, whatever the number of partitions (25 MIG placements here)
    with django_assert_num_queries(8):  # no holder: no claims, consumers or pods to look up
        assert client.get(a100).status_code == 200
    # the live fragment: session, user, device, results, visible claims, consumers, pods,
    # latest reading
    with django_assert_num_queries(8):
        client.get(h100, HTTP_HX_REQUEST="true")


@pytest.mark.parametrize("per_page", ["-1", "0", "abc", "100000", "1.5"])
def test_a_bad_page_size_shows_the_default_page(client_as, alice, mirrored_cluster, per_page):
    response = client_as(alice).get(f"/devices/?per_page={per_page}")
    assert response.status_code == 200
    assert len(response.context["table"].page) == 50


def test_the_page_size_and_number_are_bounded(client_as, alice, mirrored_cluster):
    client = client_as(alice)
    assert len(client.get("/devices/?per_page=500").context["table"].page) == Device.objects.count()
    assert len(client.get("/devices/?per_page=7").context["table"].page) == 7
    last = client.get("/devices/?page=9999")
    assert last.status_code == 200
    assert last.context["table"].page.number == last.context["table"].paginator.num_pages
    assert client.get("/devices/?page=abc").context["table"].page.number == 1


def test_the_device_list_says_when_the_mirror_has_not_synced(client_as, alice):
    content = client_as(alice).get("/devices/").content.decode()
    assert "No cluster data yet: the mirror has not synced" in content


def test_teammates_see_which_claim_holds_a_device(client_as, alice, bob, mirrored_cluster):
    for user in (alice, bob):
        content = client_as(user).get(h100_gpu0().get_absolute_url()).content.decode()
        assert "gpu-test1/pod1-gpu-nscrq" in content
        assert "/claims/gpu-test1/pod1-gpu-nscrq/" in content
        assert "pod1" in content


def test_another_tenant_learns_only_that_a_device_is_held(client_as, carol, mirrored_cluster):
    content = client_as(carol).get(h100_gpu0().get_absolute_url()).content.decode()
    assert "Held by a claim in another tenant" in content
    assert "pod1-gpu-nscrq" not in content
    assert "gpu-test1" not in content
    assert "pod1" not in content


def test_admin_access_holders_are_listed_separately(client_as, root, mirrored_cluster):
    device = Device.objects.get(driver="gpu.example.com", name="gpu-0")
    response = client_as(root).get(device.get_absolute_url())
    assert [h.claim.name for h in response.context["admin_holders"]] == ["pod0-admin-gpu-z7wjx"]
    assert all(not h.result.admin_access for h in response.context["holders"])


def test_a_device_page_shows_capacity_published_and_humanised(client_as, alice, mirrored_cluster):
    content = client_as(alice).get(h100_gpu0().get_absolute_url()).content.decode()
    assert "81559Mi" in content
    assert "79.6 GiB" in content
    assert "resource.kubernetes.io/pciBusID" in content
    assert "Raw JSON" in content
    assert "gpu.nvidia.com</a>" in content  # its device classes


def test_a_mig_device_links_to_its_parent_and_its_counters(client_as, alice, mirrored_cluster):
    device = Device.objects.get(node_name="dgx-a100-01", name="gpu-0-mig-1g10gb-15-0")
    parent = Device.objects.get(node_name="dgx-a100-01", name="gpu-0")
    content = client_as(alice).get(device.get_absolute_url()).content.decode()
    assert f'href="{parent.get_absolute_url()}">gpu-0</a>' in content
    assert "gpu-0-counter-set" in content
    assert "memory-slice-0" in content


def test_an_unknown_device_is_404(client_as, alice, mirrored_cluster):
    client = client_as(alice)
    assert client.get("/devices/gpu.nvidia.com/dgx-h100-01/gpu-99/").status_code == 404
    assert client.get("/devices/gpu.nvidia.com/no-such-pool/gpu-0/").status_code == 404


def test_devices_have_no_integer_id_urls(client_as, alice, mirrored_cluster):
    assert client_as(alice).get(f"/devices/{h100_gpu0().pk}/").status_code == 404


def test_with_many_nodes_the_node_filter_is_a_text_field(
    client_as, alice, mirrored_cluster, monkeypatch
):
    monkeypatch.setattr("devices.views.devices.NODE_SELECT_LIMIT", 2)
    content = client_as(alice).get("/devices/?node=dgx-h100-01").content.decode()
    assert 'name="node" value="dgx-h100-01"' in content
    assert '<option value="dgx-a100-01"' not in content
    assert '<option value="gpu.example.com"' in content  # the driver filter stays a select


def test_a_device_keeps_its_url_when_its_slice_is_re_created(client_as, alice, mirrored_cluster):
    import copy

    from devices.models import ResourceSlice
    from kube.kinds import Kind
    from mirror.store import apply_events

    device = h100_gpu0()
    url = device.get_absolute_url()
    assert url == "/devices/gpu.nvidia.com/dgx-h100-01/gpu-0/"
    resource_slice = device.resource_slice
    raw = copy.deepcopy(resource_slice.raw)
    apply_events(Kind.RESOURCE_SLICES, [{"type": "DELETED", "object": raw}])
    assert client_as(alice).get(url).status_code == 404
    raw["metadata"]["uid"] = "re-created-slice"
    raw["metadata"]["resourceVersion"] = "999999"
    apply_events(Kind.RESOURCE_SLICES, [{"type": "ADDED", "object": raw}])
    recreated = h100_gpu0()
    assert recreated.pk != device.pk
    assert ResourceSlice.objects.get(uid="re-created-slice") == recreated.resource_slice
    assert recreated.get_absolute_url() == url
    assert client_as(alice).get(url).context["device"] == recreated


def test_a_pool_name_with_a_slash_is_addressable(client_as, alice, mirrored_cluster):
    import copy

    from kube.kinds import Kind
    from mirror.store import apply_events

    raw = copy.deepcopy(h100_gpu0().resource_slice.raw)
    raw["metadata"].update(name="racked-slice", uid="racked-slice", resourceVersion="999999")
    raw["spec"]["pool"]["name"] = "rack-7/dgx-h100-01"
    apply_events(Kind.RESOURCE_SLICES, [{"type": "ADDED", "object": raw}])
    device = Device.objects.get(pool_name="rack-7/dgx-h100-01", name="gpu-0")
    url = device.get_absolute_url()
    assert url == "/devices/gpu.nvidia.com/rack-7/dgx-h100-01/gpu-0/"
    response = client_as(alice).get(url)
    assert response.status_code == 200
    assert response.context["device"] == device


def test_the_device_list_refreshes_its_table_with_the_current_filters(
    client_as, alice, mirrored_cluster
):
    client = client_as(alice)
    content = client.get("/devices/?node=dgx-h100-01&state=free&page=1").content.decode()
    assert 'hx-get="/devices/?node=dgx-h100-01&amp;state=free&amp;page=1"' in content
    assert "every 10s" in content
    poll = client.get("/devices/?node=dgx-h100-01&state=free&page=1", HTTP_HX_REQUEST="true")
    fragment = poll.content.decode()
    assert "<html" not in fragment
    assert "<form" not in fragment  # the filter form is not swapped
    assert fragment.lstrip().startswith('<div id="device-table"')
    assert 'hx-get="/devices/?node=dgx-h100-01&amp;state=free&amp;page=1"' in fragment
    assert (
        poll.context["table"].paginator.count
        == Device.objects.filter(node_name="dgx-h100-01", state="free").count()
    )
    assert "HX-Request" in poll["Vary"]


def test_the_export_link_carries_the_active_filters(client_as, alice, mirrored_cluster):
    content = client_as(alice).get("/devices/?driver=gpu.example.com&q=").content.decode()
    assert 'href="/api/v1/devices/export/?driver=gpu.example.com"' in content
    fragment = client_as(alice).get("/devices/?state=free", HTTP_HX_REQUEST="true")
    assert 'hx-swap-oob="true" href="/api/v1/devices/export/?state=free"' in (
        fragment.content.decode()
    )


def test_the_filter_form_is_rendered_from_the_filterset(client_as, alice, mirrored_cluster):
    content = client_as(alice).get("/devices/?state=shared").content.decode()
    for name in ("q", "driver", "model", "node", "device_class", "state"):
        assert f'name="{name}"' in content
    assert '<option value="shared" selected>Shared</option>' in content
    assert '<option value="mig.nvidia.com">' in content


def test_state_and_reason_are_shown_wherever_state_is(client_as, alice, mirrored_cluster):
    device = h100_gpu0()
    Device.objects.filter(pk=device.pk).update(state_reason="held by gpu-test1/pod1-gpu-nscrq")
    listed = client_as(alice).get("/devices/?node=dgx-h100-01").content.decode()
    assert "held by gpu-test1/pod1-gpu-nscrq" in listed
    page = client_as(alice).get(device.get_absolute_url()).content.decode()
    assert 'data-testid="device-state"' in page
    assert "held by gpu-test1/pod1-gpu-nscrq" in page
    node = client_as(alice).get("/nodes/dgx-h100-01/").content.decode()
    assert "held by gpu-test1/pod1-gpu-nscrq" in node


def test_the_device_page_refreshes_its_state_and_holders(client_as, bob, mirrored_cluster):
    url = h100_gpu0().get_absolute_url()
    page = client_as(bob).get(url).content.decode()
    assert f'hx-get="{url}"' in page
    fragment = client_as(bob).get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment
    assert "Raw JSON" not in fragment
    assert "gpu-test1/pod1-gpu-nscrq" in fragment
    assert 'id="device-state-badge" hx-swap-oob="true"' in fragment


def test_the_live_fragment_keeps_holders_of_other_tenants_anonymous(
    client_as, carol, mirrored_cluster
):
    fragment = client_as(carol).get(h100_gpu0().get_absolute_url(), HTTP_HX_REQUEST="true")
    content = fragment.content.decode()
    assert "Held by a claim in another tenant" in content
    assert "gpu-test1" not in content
