"""Device class pages: selectors, config, and the devices of the class's driver."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("persona", ["alice", "bob", "carol", "root"])
def test_every_signed_in_user_sees_device_classes(client_as, personas, mirrored_cluster, persona):
    client = client_as(personas[persona])
    assert client.get("/device-classes/").status_code == 200
    assert client.get("/device-classes/gpu.nvidia.com/").status_code == 200


def test_the_list_counts_the_devices_each_class_matches(client_as, alice, mirrored_cluster):
    from devices.models import Device

    response = client_as(alice).get("/device-classes/")
    table = response.context["table"]
    assert table.paginator.count == 6
    counts = {row.record.name: row.record for row in table.rows}
    assert counts["gpu.example.com"].matching_device_count == 8
    assert counts["mig.nvidia.com"].matching_device_count == 200
    assert counts["mig.nvidia.com"].free_device_count == (
        Device.objects.filter(device_type="mig").free().count()
    )
    assert b"Matching devices" in response.content


def test_the_footnote_says_membership_is_by_cel_selectors(client_as, alice, mirrored_cluster):
    content = client_as(alice).get("/device-classes/").content.decode()
    note = content[content.index('data-testid="membership-note"') :].split("</p>")[0]
    assert "every CEL selector of the class accepts" in note
    assert "Devices of its driver" not in content
    assert "will come from the allocator" not in content


def test_device_class_pages_cost_a_fixed_number_of_queries(
    client_as, root, mirrored_cluster, django_assert_num_queries
):
    client = client_as(root)
    # session, user, count, page (counts annotated)
    with django_assert_num_queries(4):
        client.get("/device-classes/")
    # session, user, the class with its counts, whether its free devices share counters
    with django_assert_num_queries(4):
        client.get("/device-classes/mig.nvidia.com/")


def test_the_list_filters_with_htmx(client_as, alice, mirrored_cluster):
    response = client_as(alice).get("/device-classes/?q=example", HTTP_HX_REQUEST="true")
    assert b"<html" not in response.content
    assert b"gpu.example.com" in response.content
    assert b"mig.nvidia.com" not in response.content


def test_a_class_page_shows_its_selectors_and_extended_resource(client_as, alice, mirrored_cluster):
    content = client_as(alice).get("/device-classes/gpu.nvidia.com/").content.decode()
    assert "device.attributes[&#x27;gpu.nvidia.com&#x27;].type == &#x27;gpu&#x27;" in content
    assert "nvidia.com/gpu" in content
    assert 'data-testid="matching-devices">24</a>' in content  # 16 H100 + 8 A100, not MIG


def test_a_class_with_a_broken_selector_says_so_and_matches_nothing(
    client_as, alice, mirrored_cluster
):
    from devices.models import DeviceClass
    from mirror.classes import refresh_class_matches

    broken = DeviceClass.objects.get(name="gpu.example.com")
    broken.selectors = [{"cel": {"expression": "device.driver == "}}]
    broken.save()
    refresh_class_matches()
    content = client_as(alice).get("/device-classes/gpu.example.com/").content.decode()
    assert "Selector 1: " in content
    assert 'data-testid="matching-devices">0</a>' in content


def test_the_list_says_when_the_mirror_has_not_synced(client_as, alice):
    assert b"the mirror has not synced" in client_as(alice).get("/device-classes/").content


def test_an_unknown_class_is_404(client_as, alice, mirrored_cluster):
    assert client_as(alice).get("/device-classes/nope.example.com/").status_code == 404
