"""The device list draws its rows in one pass (``DeviceTable.rows_html``): exactly the HTML
django-tables2's generic rendering gives, for every kind of row the fixtures hold (MIG
partitions, taints, legacy nodes without model or memory, empty cells)."""

from __future__ import annotations

import re

import pytest
from django.template.loader import render_to_string
from django.test import RequestFactory

from devices.models import Device
from devices.tables import DeviceTable

pytestmark = pytest.mark.django_db


def _tbody(table):
    context = {"table": table, "request": RequestFactory().get("/")}
    html = render_to_string("includes/table.html", context)
    body = html[html.index("<tbody") : html.index("</tbody>")]
    return re.sub(r">\s+<", "><", re.sub(r"\s+", " ", body)).strip()


def test_the_one_pass_rows_equal_django_tables2s(mirrored_cluster):
    devices = Device.objects.all()
    assert devices.count() > 200
    fast = DeviceTable(devices)
    fast.paginate(per_page=500)
    generic = DeviceTable(devices)
    generic.paginate(per_page=500)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DeviceTable, "rows_html", property(lambda self: ""))
        expected = _tbody(generic)
    assert _tbody(fast) == expected
    assert "<tr" in expected and "state-cell" in expected


def test_an_empty_page_still_says_so():
    table = DeviceTable(Device.objects.none())
    table.paginate(per_page=50)
    assert "No device matches." in _tbody(table)


def test_the_node_lists_one_pass_rows_equal_django_tables2s(mirrored_cluster):
    from devices.models import Node
    from devices.tables import NodeTable

    def table():
        nodes = Node.objects.with_device_counts()
        built = NodeTable(nodes)
        built.paginate(per_page=50)
        built.gpu_models = Node.objects.all().gpu_models()
        return built

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(NodeTable, "rows_html", property(lambda self: ""))
        expected = _tbody(table())
    assert _tbody(table()) == expected
    assert expected.count("<tr") == Node.objects.count() >= 5
