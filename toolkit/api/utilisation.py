"""The utilisation endpoints' shared parts: the ``range`` parameter (the pages' time ranges,
``toolkit.charts``), its OpenAPI description, and the response every one of them gives."""

from __future__ import annotations

import datetime
from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from toolkit.charts import DEFAULT_RANGE, RANGES, TimeRange

__all__ = [
    "RANGE_PARAMETER",
    "UTILISATION_RESPONSE",
    "requested_range",
    "utilisation_response",
    "utilisation_schema",
]

Points = list[tuple[datetime.datetime, float | None]]

RANGE_PARAMETER = OpenApiParameter(
    "range",
    OpenApiTypes.STR,
    enum=list(RANGES),
    default=DEFAULT_RANGE.key,
    description=(
        "How far back: 1h reads every raw sample (kept for TELEMETRY_RAW_RETENTION), 6h and "
        "24h 5-minute averages, 7d and 30d hourly averages."
    ),
)


def utilisation_schema(name: str, **extra: serializers.Field) -> serializers.Serializer:
    """The response every utilisation endpoint gives, plus its own ``extra`` fields."""
    return inline_serializer(
        name,
        fields={
            "range": serializers.ChoiceField(choices=list(RANGES)),
            "resolution": serializers.ChoiceField(choices=["raw", "5m", "1h"]),
            "start": serializers.DateTimeField(),
            "end": serializers.DateTimeField(),
            "series": serializers.DictField(
                child=serializers.ListField(
                    child=serializers.ListField(), help_text="[time, value or null] pairs"
                ),
                help_text=(
                    "Series name → points, oldest first: gpu_util and memory_used in percent; "
                    "power_w in watts (devices and nodes: the devices' total). A range read "
                    "from rollups ends with the open bucket, from the raw samples, so its last "
                    "point holds the latest reading."
                ),
            ),
            "simulated": serializers.BooleanField(
                help_text="The readings are the demo's simulation, not a GPU's."
            ),
            **extra,
        },
    )


UTILISATION_RESPONSE = utilisation_schema("Utilisation")


def requested_range(request: Request) -> TimeRange:
    value = request.query_params.get("range")
    if value is None or value == "":
        return DEFAULT_RANGE
    if value not in RANGES:
        raise ValidationError({"range": [f"Unknown range {value!r}: one of {', '.join(RANGES)}."]})
    return RANGES[value]


def utilisation_response(
    span: TimeRange, series: dict[str, Points], *, simulated: bool, **extra: Any
) -> Response:
    now = timezone.now()
    return Response(
        {
            "range": span.key,
            "resolution": span.resolution,
            "start": span.start(now),
            "end": now,
            "series": {
                name: [
                    (moment, None if value is None else round(value, 2)) for moment, value in points
                ]
                for name, points in series.items()
            },
            "simulated": simulated,
            **extra,
        }
    )
