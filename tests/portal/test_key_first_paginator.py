"""List pages find a page's keys first, then read those rows: the same rows, in the same order,
as slicing the ordered queryset, on every page and whatever the order."""

from __future__ import annotations

import pytest
from django.core.paginator import Paginator
from django.test import RequestFactory
from django_tables2 import RequestConfig

from portal.models import Tenant
from portal.tables import TenantTable
from tests.factories import TenantFactory
from toolkit.htmx import KeyFirstPaginator

pytestmark = pytest.mark.django_db


def _pages(paginator_class, sort, per_page=4):
    table = TenantTable(Tenant.objects.all())
    RequestConfig(RequestFactory().get("/", {"sort": sort}), paginate=False).configure(table)
    table.paginate(paginator_class=paginator_class, per_page=per_page, orphans=1)
    return [
        [row.record.pk for row in table.paginator.page(number).object_list]
        for number in table.paginator.page_range
    ]


@pytest.mark.parametrize("sort", ["name", "-name", "slug", "-slug"])
def test_pages_hold_the_same_rows_in_the_same_order_as_slicing(sort):
    for index in range(11):
        TenantFactory(name=f"Team {index % 4} {index}", slug=f"team-{(index * 7) % 11}")
    expected = _pages(Paginator, sort)
    assert len(expected) == 3  # 11 rows, 4 a page, the last row an orphan of page 3
    assert _pages(KeyFirstPaginator, sort) == expected


def test_a_page_reads_its_rows_in_one_query(django_assert_num_queries):
    TenantFactory.create_batch(6)
    table = TenantTable(Tenant.objects.order_by("name"))
    table.paginate(paginator_class=KeyFirstPaginator, per_page=4)
    page = table.paginator.page(2)
    with django_assert_num_queries(1):
        assert len([row.record for row in page.object_list]) == 2


def test_cell_render_methods_get_the_arguments_they_name():
    """django-tables2's per-cell signature lookup is remembered per function (portal.apps)."""
    import django_tables2 as tables

    class Pair(tables.Table):
        a = tables.Column()
        b = tables.Column()

        def render_a(self, value):
            return f"a={value}"

        def render_b(self, record, value, **rest):
            return f"b={value}/{record['a']}/{sorted(rest)[:2]}"

    for _ in range(2):  # the second table hits the remembered signatures
        row = next(iter(Pair([{"a": 1, "b": 2}]).rows))
        assert row.get_cell("a") == "a=1"
        assert row.get_cell("b") == "b=2/1/['bound_column', 'bound_row']"
