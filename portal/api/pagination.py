"""One pagination style for every list endpoint: ``?limit=&offset=``, validated.

``limit`` is a whole number from 1 to ``max_limit`` and ``offset`` from 0 to ``MAX_OFFSET``;
anything else (``limit=null``, ``limit=-1``, ``limit=100000``, the parameter given twice) is
a 400 in the API's error format rather than a silent default.
"""

from __future__ import annotations

from typing import Any

from rest_framework import pagination
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request

__all__ = ["LimitOffsetPagination", "MAX_OFFSET", "bounded_integer"]

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
