"""One URL, two renderings (STYLE §10): the whole page, or the fragment htmx asked for; and
the one way a list page goes from its FilterSet to a table page (``render_list``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from django import forms
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django_filters import FilterSet
from django_tables2 import RequestConfig, Table
from django_tables2.data import TableQuerysetData
from django_tables2.rows import BoundRows

from toolkit.paging import keys_first

if TYPE_CHECKING:
    from django_htmx.middleware import HtmxDetails

__all__ = [
    "DEFAULT_PER_PAGE",
    "KeyFirstPaginator",
    "MAX_PER_PAGE",
    "offer_choices",
    "per_page",
    "render_list",
    "render_page",
    "wants_fragment",
]

DEFAULT_PER_PAGE = 50
MAX_PER_PAGE = 500


def wants_fragment(request: HttpRequest) -> bool:
    """True for an htmx request that will swap part of the page.

    Boosted requests and history restores need the whole page, so they get it.
    """
    htmx: HtmxDetails | None = getattr(request, "htmx", None)  # django-htmx's middleware
    if not htmx:
        return False
    return not htmx.boosted and not htmx.history_restore_request


def render_page(
    request: HttpRequest,
    template: str,
    fragment: str,
    context: dict[str, Any],
    status: int = 200,
) -> HttpResponse:
    """Renders ``template`` whole, or its ``{% partialdef fragment %}`` for htmx."""
    name = f"{template}#{fragment}" if wants_fragment(request) else template
    response = render(request, name, context, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response


def per_page(request: HttpRequest, default: int = DEFAULT_PER_PAGE) -> int:
    """``?per_page=`` if it is a whole number from 1 to ``MAX_PER_PAGE``; ``default``
    otherwise (a bad value is a default page, never an error)."""
    try:
        value = int(request.GET.get("per_page", default))
    except ValueError:
        return default
    return value if 1 <= value <= MAX_PER_PAGE else default


def offer_choices(
    filterset: FilterSet, **choices: tuple[str, Iterable[str | tuple[str, str]] | None]
) -> None:
    """Shows the named text filters as selects: ``name=(empty label, values)``. Only the page's
    form changes; the filter still takes any value (the API's ``?name=``). ``values=None``
    keeps the text field (too many values for a usable select)."""
    form = filterset.form
    for name, (empty_label, values) in choices.items():
        if values is None:
            continue
        options = [value if isinstance(value, tuple) else (value, value) for value in values]
        form.fields[name].widget = forms.Select(choices=[("", empty_label), *options])


def _style_filter_form(filterset: FilterSet) -> None:
    """Bootstrap classes and labels for ``includes/filter_form.html``, which renders any
    FilterSet's fields in order."""
    for name, field in filterset.form.fields.items():
        widget = field.widget
        is_select = isinstance(widget, forms.Select)
        control = "form-select form-select-sm" if is_select else "form-control form-control-sm"
        widget.attrs.setdefault("class", control)
        widget.attrs.setdefault("aria-label", str(field.label or name))
        if not is_select:
            widget.attrs.setdefault("placeholder", str(field.label or name))


class KeyFirstPaginator(Paginator):
    """Pages a queryset-backed table by finding the page's primary keys first, in the table's
    order, then reading those rows (:func:`toolkit.paging.keys_first`), still one query."""

    def page(self, number: Any) -> Any:
        number = self.validate_number(number)
        rows = self.object_list
        data = getattr(rows, "data", None)
        if not isinstance(rows, BoundRows) or not isinstance(data, TableQuerysetData):
            return super().page(number)
        bottom = (number - 1) * self.per_page
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        records = keys_first(data.data, bottom, top)  # read when the page is rendered, once
        return self._get_page(  # type: ignore[attr-defined]  # django-stubs omit this hook
            BoundRows(data=records, table=rows.table, pinned_data=rows.pinned_data), number, self
        )


def _is_filtered(filterset: FilterSet) -> bool:
    data = filterset.form.data
    return any(data.get(name) not in (None, "", "unknown") for name in filterset.filters)


def render_list(
    request: HttpRequest,
    *,
    filterset: FilterSet,
    table_class: type[Table],
    template: str,
    fragment: str,
    context: Mapping[str, Any] | None = None,
    page_context: Callable[[Table], Mapping[str, Any]] | None = None,
    filter_choices: Callable[[], Mapping[str, Any]] | None = None,
    default_per_page: int = DEFAULT_PER_PAGE,
) -> HttpResponse:
    """A list page: ``filterset.qs`` → ``table_class`` ordered by ``?sort=`` → one page of
    ``?per_page=`` rows (bounded, see ``per_page``; a page number past the end shows the last
    page) → the whole ``template``, or its ``fragment`` for htmx (filtering, paging, polling).

    The template gets ``filterset``, ``table``, ``fragment``, ``is_filtered`` and ``has_data``
    (whether the unfiltered list has rows at all), then ``context``; ``page_context(table)``
    adds what depends on the page's rows (fetched once per page, never per row).
    ``filter_choices()`` (only for the whole page, which shows the filter form) answers
    ``offer_choices`` keyword arguments: the values the form's selects offer.
    """
    table = table_class(filterset.qs)
    RequestConfig(request, paginate=False).configure(table)
    table.paginate(paginator_class=KeyFirstPaginator, per_page=per_page(request, default_per_page))
    table.page = table.paginator.get_page(request.GET.get(table.prefixed_page_field))
    is_fragment = wants_fragment(request)
    full: dict[str, Any] = {
        "filterset": filterset,
        "table": table,
        "fragment": fragment,
        "is_filtered": _is_filtered(filterset),
        "has_data": bool(table.paginator.count) or filterset.queryset.exists(),
        **(context or {}),
    }
    if page_context is not None:
        full.update(page_context(table))
    if not is_fragment:
        if filter_choices is not None:
            offer_choices(filterset, **filter_choices())
        _style_filter_form(filterset)
    return render_page(request, template, fragment, full)
