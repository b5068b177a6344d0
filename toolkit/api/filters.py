"""Query parameters of the API's lists: one rule, applied by these backends everywhere.

A known parameter (a filter of the list's FilterSet, ``ordering``, ``limit``, ``offset``) is
given at most once, and a value it cannot take is a 400 in the API's error format, never
silently ignored: ``ready=null``, ``ordering=nonsense``, ``state=bogus``. A blank value means
the parameter is absent (what an empty HTML form field sends). Unknown parameters are ignored,
so that clients may add cache-busters or tracing parameters.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import django_filters
from django.db.models import QuerySet
from django_filters import utils
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import filters
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request

__all__ = ["FilterBackend", "OrderingFilter", "single_value"]

BOOLEAN_VALUES = {"true", "false", "True", "False"}


def single_value(request: Request, name: str) -> str | None:
    """The value of ``?name=`` (None when absent or blank); a 400 when it is given twice."""
    values = request.query_params.getlist(name)
    if len(values) > 1:
        raise ValidationError({name: ["Give this parameter once."]})
    return values[0] if values and values[0] != "" else None


def in_utc(name: str, value: dt.datetime) -> dt.datetime:
    """``value`` in UTC: PostgreSQL refuses offsets Python accepts (beyond ±15:59), and a
    time at the end of year 9999 has no UTC equivalent (400)."""
    try:
        return value.astimezone(dt.UTC)
    except OverflowError:
        raise ValidationError({name: ["The time is out of range."]}) from None


class FilterBackend(DjangoFilterBackend):
    """django-filter's backend, refusing repeated filters and booleans other than true/false
    (django-filter's widget reads any other value as "no filter"); times are compared in UTC."""

    def filter_queryset(self, request: Request, queryset: QuerySet[Any], view: Any) -> Any:
        filterset_class = self.get_filterset_class(view, queryset)
        for name, field in (filterset_class.base_filters if filterset_class else {}).items():
            value = single_value(request, name)
            if (
                value is not None
                and isinstance(field, django_filters.BooleanFilter)
                and value not in BOOLEAN_VALUES
            ):
                raise ValidationError({name: ["Expected true or false."]})
        filterset = self.get_filterset(request, queryset, view)
        if filterset is None:
            return queryset
        if not filterset.is_valid():
            raise utils.translate_validation(filterset.errors)
        for name, value in filterset.form.cleaned_data.items():
            if isinstance(value, dt.datetime):
                filterset.form.cleaned_data[name] = in_utc(name, value)
        return filterset.qs


class OrderingFilter(filters.OrderingFilter):
    """``?ordering=`` naming only the list's ordering fields (``-`` for descending)."""

    def get_ordering(self, request: Request, queryset: QuerySet[Any], view: Any) -> Any:
        value = single_value(request, self.ordering_param)
        if value is not None:
            terms = [term.strip() for term in value.split(",")]
            valid = self.remove_invalid_fields(queryset, terms, view, request)
            if len(valid) != len(terms):
                choices = sorted(
                    name for name, _ in self.get_valid_fields(queryset, view, {"request": request})
                )
                raise ValidationError(
                    {self.ordering_param: [f"Order by one of: {', '.join(choices)}."]}
                )
        return super().get_ordering(request, queryset, view)
