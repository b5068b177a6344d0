"""One pagination style for every list endpoint: ``?limit=&offset=``, validated; lists that
are read deep (devices) add ``?cursor=`` (``KeysetPagination``).

``limit`` is a whole number from 1 to ``max_limit`` and ``offset`` from 0 to ``MAX_OFFSET``;
anything else (``limit=null``, ``limit=-1``, ``limit=100000``, the parameter given twice) is
a 400 in the API's error format rather than a silent default.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import F, Q, QuerySet
from rest_framework import pagination
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

from toolkit.api.filters import single_value
from toolkit.paging import keys_first

__all__ = [
    "KeysetPagination",
    "LimitOffsetPagination",
    "MAX_OFFSET",
    "OrderingKey",
    "after_position",
    "bounded_integer",
    "keyset_chunks",
    "ordering_keys",
    "position_of",
]

MAX_OFFSET = 1_000_000_000


def bounded_integer(request: Request, name: str, low: int, high: int) -> int | None:
    """``?name=`` as a whole number from ``low`` to ``high``; None when absent or blank."""
    values = request.query_params.getlist(name)
    if len(values) > 1:
        raise ValidationError({name: ["Give this parameter once."]})
    if not values or values[0] == "":
        return None
    raw = values[0]
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 12 or not low <= int(raw) <= high:
        raise ValidationError({name: [f"Expected a whole number from {low} to {high}."]})
    return int(raw)


class LimitOffsetPagination(pagination.LimitOffsetPagination):
    default_limit = 50
    max_limit = 1000

    def get_limit(self, request: Request) -> int:
        limit = bounded_integer(request, self.limit_query_param, 1, self.max_limit)
        return self.default_limit if limit is None else limit

    def get_offset(self, request: Request) -> int:
        offset = bounded_integer(request, self.offset_query_param, 0, MAX_OFFSET)
        return 0 if offset is None else offset

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        bounds = {
            self.limit_query_param: {"minimum": 1, "maximum": self.max_limit},
            self.offset_query_param: {"minimum": 0, "maximum": MAX_OFFSET},
        }
        for parameter in parameters:
            parameter["schema"].update(bounds.get(parameter["name"], {}))
        return parameters


# -- keyset (cursor) pagination -------------------------------------------------------------------

# Under the query string limit (QUERY_STRING_MAX_BYTES); a real cursor is far shorter.
MAX_CURSOR_LENGTH = 3000


@dataclass(frozen=True)
class OrderingKey:
    """One term of a list's total order. Nulls sort after every value whichever the direction
    (PostgreSQL's default for ascending), on every backend; a reversed key puts them first."""

    name: str
    descending: bool
    field: Any
    nulls_last: bool = True

    @property
    def term(self) -> str:
        return f"-{self.name}" if self.descending else self.name

    @property
    def expression(self) -> Any:
        column = F(self.name)
        direction = column.desc if self.descending else column.asc
        if not self.field.null:
            return direction()
        return direction(nulls_last=True) if self.nulls_last else direction(nulls_first=True)

    def reversed(self) -> OrderingKey:
        return OrderingKey(self.name, not self.descending, self.field, not self.nulls_last)

    def after(self, value: Any) -> Q:
        """Rows strictly after ``value`` on this term."""
        if value is None:
            return Q(pk__in=[]) if self.nulls_last else Q(**{f"{self.name}__isnull": False})
        beyond = Q(**{f"{self.name}__{'lt' if self.descending else 'gt'}": value})
        if self.field.null and self.nulls_last:
            return beyond | Q(**{f"{self.name}__isnull": True})
        return beyond

    def at_or_after(self, value: Any) -> Q:
        """Rows at ``value`` or after on this term, as one range condition (``>=``), which
        the database answers with an index range scan where an index starts with the term;
        an OR of ``>`` and ``=`` it does not."""
        if value is None:
            return Q(**{f"{self.name}__isnull": True}) if self.nulls_last else Q()
        at = Q(**{f"{self.name}__{'lte' if self.descending else 'gte'}": value})
        if self.field.null and self.nulls_last:
            return at | Q(**{f"{self.name}__isnull": True})
        return at

    def equal(self, value: Any) -> Q:
        return Q(**{f"{self.name}__isnull": True}) if value is None else Q(**{self.name: value})


def ordering_keys(queryset: QuerySet[Any]) -> list[OrderingKey]:
    """The queryset's ordering (``?ordering=``, else the model's), then the model's own
    ordering and the primary key as tiebreakers: a total order, which keyset pagination needs.
    Only the model's own, non-relational fields may take part."""
    meta = queryset.model._meta
    terms = [*(queryset.query.order_by or meta.ordering), *meta.ordering, "pk"]
    keys: list[OrderingKey] = []
    for term in terms:
        if not isinstance(term, str):
            raise TypeError(f"Keyset pagination orders by field names, not {term!r}.")
        name = term.removeprefix("-")
        if name == meta.pk.name:
            name = "pk"
        if any(key.name == name for key in keys):
            continue
        field = meta.pk if name == "pk" else meta.get_field(name)
        if field.is_relation:
            raise TypeError(f"Keyset pagination cannot order by the relation {name!r}.")
        keys.append(OrderingKey(name, term.startswith("-"), field))
        if name == "pk":
            break
    return keys


def after_position(keys: list[OrderingKey], values: list[Any]) -> Q:
    """Rows strictly after ``values`` in the order of ``keys``: (k1 > v1) or (k1 = v1 and k2 >
    v2) or ...; led by "k1 at or after v1" (``OrderingKey.at_or_after``)."""
    after = Q(pk__in=[])
    equal = Q()
    for key, value in zip(keys, values, strict=True):
        after |= equal & key.after(value)
        equal &= key.equal(value)
    return keys[0].at_or_after(values[0]) & after


class KeysetPagination(LimitOffsetPagination):
    """``?cursor=`` pages through a list at the cost of its first page, however deep, and
    stays stable while rows are inserted and deleted between requests; ``?limit=&offset=``
    is still answered as before.

    Every response carries ``next_cursor``: the opaque cursor of the next page (``null`` on
    the last one). Following cursors, ``next`` and ``previous`` are cursor links. A cursor
    records the position (the last or first row's values of the list's ordering, primary key
    included) and the ordering it was made for; one that does not decode, or that was made for
    another ``ordering``, is a 400. Pages are read in the list's order, which must name the
    model's own fields (``ordering_keys``); the rows are model instances or ``.values()``
    dicts that include those fields (``pk`` as ``pk``).
    """

    # Set by paginate_queryset before anything reads them; get_limit always answers a number.
    request: Request
    limit: int
    offset: int
    count: int
    cursor_query_param = "cursor"
    cursor_query_description = (
        "Opaque position from a previous answer's next_cursor (or its next/previous links): "
        "pages of any depth at the cost of the first. Not combined with offset."
    )

    def paginate_queryset(  # type: ignore[override]  # a keyset needs a queryset, not a list
        self, queryset: QuerySet[Any], request: Request, view: Any = None
    ) -> list[Any]:
        self.request = request
        self.limit = self.get_limit(request)
        self.keys = ordering_keys(queryset)
        queryset = queryset.order_by(*(key.expression for key in self.keys))
        self.next_position: list[Any] | None = None
        self.previous_position: list[Any] | None = None
        raw = single_value(request, self.cursor_query_param)
        if raw is None:
            self.cursor_mode = False
            rows = self.offset_page(queryset, request)
            if rows and self.offset + len(rows) < self.count:
                self.next_position = self.position(rows[-1])
            return rows
        if single_value(request, self.offset_query_param) is not None:
            raise ValidationError({self.cursor_query_param: ["Give either cursor or offset."]})
        self.cursor_mode = True
        self.offset = 0
        position, backwards = self.decode_cursor(raw)
        self.count = self.get_count(queryset)
        if backwards:
            keys = [key.reversed() for key in self.keys]
            found = queryset.filter(after_position(keys, position)).order_by(
                *(key.expression for key in keys)
            )
            rows = list(found[: self.limit + 1])
            more = len(rows) > self.limit
            rows = rows[: self.limit]
            rows.reverse()
            if rows:
                self.next_position = self.position(rows[-1])
                self.previous_position = self.position(rows[0]) if more else None
            return rows
        rows = list(queryset.filter(after_position(self.keys, position))[: self.limit + 1])
        more = len(rows) > self.limit
        rows = rows[: self.limit]
        if rows:
            self.next_position = self.position(rows[-1]) if more else None
            self.previous_position = self.position(rows[0])
        return rows

    def offset_page(self, queryset: QuerySet[Any], request: Request) -> list[Any]:
        """LimitOffsetPagination's page, but past the first page the database skips the
        ``offset`` rows reading their primary keys only, then reads the page's rows whole:
        skipping whole rows computed every column of each (text of JSON columns, joins)."""
        self.count = self.get_count(queryset)
        self.offset = self.get_offset(request)
        if self.count > self.limit and self.template is not None:
            self.display_page_controls = True
        if self.count == 0 or self.offset > self.count:
            return []
        if self.offset == 0:
            return list(queryset[: self.limit])
        return list(keys_first(queryset, self.offset, self.offset + self.limit))

    def position(self, row: Any) -> list[Any]:
        return position_of(self.keys, row)

    def encode_cursor(self, position: list[Any], *, backwards: bool) -> str:
        document = {"o": [key.term for key in self.keys], "p": position, "b": backwards}
        text = json.dumps(document, cls=DjangoJSONEncoder, separators=(",", ":"))
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    def decode_cursor(self, raw: str) -> tuple[list[Any], bool]:
        invalid = ValidationError(
            {
                self.cursor_query_param: [
                    "Invalid cursor: use the next_cursor, next or previous of an answer as is."
                ]
            }
        )
        try:
            if len(raw) > MAX_CURSOR_LENGTH:
                raise ValueError
            document = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
            terms, position, backwards = document["o"], document["p"], document["b"]
            if not (isinstance(position, list) and isinstance(backwards, bool)):
                raise ValueError
        except (ValueError, TypeError, KeyError, binascii.Error):
            raise invalid from None
        if terms != [key.term for key in self.keys]:
            raise ValidationError(
                {
                    self.cursor_query_param: [
                        "This cursor was made for another ordering: "
                        "start again without it, or keep the ordering it was made for."
                    ]
                }
            )
        if len(position) != len(self.keys):
            raise invalid
        values = []
        for key, value in zip(self.keys, position, strict=True):
            if value is None and not key.field.null:
                raise invalid
            try:
                values.append(None if value is None else key.field.to_python(value))
            except (DjangoValidationError, TypeError, ValueError):
                raise invalid from None
        return values, backwards

    def cursor_link(self, position: list[Any] | None, *, backwards: bool) -> str | None:
        if position is None:
            return None
        url = self.request.build_absolute_uri()
        url = remove_query_param(url, self.offset_query_param)
        url = replace_query_param(url, self.limit_query_param, self.limit)
        cursor = self.encode_cursor(position, backwards=backwards)
        return replace_query_param(url, self.cursor_query_param, cursor)

    def get_next_link(self) -> str | None:
        if self.cursor_mode:
            return self.cursor_link(self.next_position, backwards=False)
        return super().get_next_link()

    def get_previous_link(self) -> str | None:
        if self.cursor_mode:
            return self.cursor_link(self.previous_position, backwards=True)
        return super().get_previous_link()

    def get_paginated_response(self, data: Any) -> Response:
        next_cursor = (
            None
            if self.next_position is None
            else self.encode_cursor(self.next_position, backwards=False)
        )
        return Response(
            {
                "count": self.count,
                "next": self.get_next_link(),
                "previous": self.get_previous_link(),
                "next_cursor": next_cursor,
                "results": data,
            }
        )

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        response = super().get_paginated_response_schema(schema)
        properties = response["properties"]
        properties["next_cursor"] = {
            "type": "string",
            "nullable": True,
            "description": "Give it as ?cursor= for the next page (null on the last page).",
        }
        # ``results`` last, as in the answers.
        properties["results"] = properties.pop("results")
        return response

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            *super().get_schema_operation_parameters(view),
            {
                "name": self.cursor_query_param,
                "required": False,
                "in": "query",
                "description": self.cursor_query_description,
                "schema": {"type": "string"},
            },
        ]


def keyset_chunks(queryset: QuerySet[Any], size: int) -> Iterator[tuple[list[Any], QuerySet[Any]]]:
    """Every row of ``queryset``, in its order (``ordering_keys``), as lists of at most
    ``size`` rows, each read by one query starting after the previous chunk's last row: an
    index range scan each where an index matches the order, and nothing held open between
    chunks (no transaction, no server-side cursor) while a response streams them. Each chunk
    comes with the query that read it, to use as a subquery."""
    keys = ordering_keys(queryset)
    ordered = queryset.order_by(*(key.expression for key in keys))
    page = ordered[:size]
    while True:
        rows = list(page)
        if rows:
            yield rows, page
        if len(rows) < size:
            return
        page = ordered.filter(after_position(keys, position_of(keys, rows[-1])))[:size]


def position_of(keys: list[OrderingKey], row: Any) -> list[Any]:
    """The values of ``keys`` in ``row`` (a model instance or a ``.values()`` dict)."""
    if isinstance(row, dict):
        return [row[key.name] for key in keys]
    return [getattr(row, key.name) for key in keys]
