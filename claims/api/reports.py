"""``GET /api/v1/reports/allocation-hours/``: the allocation-hours report (``claims.usage.reports``)
as JSON, scoped like the page: portal admins every tenant, everyone else their tenants."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claims.models import AllocationRecord
from claims.usage.reports import GroupBy, PeriodError, Preset, allocation_hours, resolve_period

__all__ = ["AllocationHoursView"]


class AllocationHoursQuerySerializer(serializers.Serializer):
    period = serializers.ChoiceField(
        choices=Preset.choices,
        required=False,
        help_text="A preset period, used when neither `from` nor `to` is given "
        "(default: last-30-days).",
    )
    group_by = serializers.ChoiceField(choices=GroupBy.choices, default=GroupBy.TENANT)

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        # "from" is a Python keyword: declared by name.
        for name, moment in (("from", "start"), ("to", "end")):
            fields[name] = serializers.CharField(
                required=False,
                help_text=f"The period's {moment}: a date (YYYY-MM-DD"
                + (", included" if name == "to" else "")
                + ") or an ISO 8601 time. Give both or neither.",
            )
        return fields

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        try:
            attrs["period_range"] = resolve_period(
                attrs.get("period", ""), attrs.get("from", ""), attrs.get("to", "")
            )
        except PeriodError as error:
            raise serializers.ValidationError({"period": [str(error)]}) from error
        return attrs


class ReportRowSerializer(serializers.Serializer):
    group = serializers.CharField(
        source="key", help_text="The group's key: tenant slug, namespace, class or model."
    )
    # A declared field (the serializer's metaclass takes it off the class), not Field.label.
    label = serializers.CharField(  # type: ignore[assignment]
        help_text="How the group is shown (a tenant's name)."
    )
    device_hours = serializers.FloatField()
    memory_gib_hours = serializers.FloatField(help_text="Device memory (GiB) × hours held.")
    allocations = serializers.IntegerField(help_text="Device allocations that overlap the period.")


class AllocationHoursSerializer(serializers.Serializer):
    period_start = serializers.DateTimeField(source="period.start")
    period_end = serializers.DateTimeField(source="period.end", help_text="Excluded.")
    group_by = serializers.ChoiceField(choices=GroupBy.choices)
    rows = ReportRowSerializer(many=True, help_text="Largest device-hours first.")
    device_hours = serializers.FloatField(help_text="Total over the rows.")
    memory_gib_hours = serializers.FloatField(help_text="Total over the rows.")


class AllocationHoursView(APIView):
    """Device-hours and device-memory-GiB-hours each group held over a period, from the
    allocation history: a device counts for the part of its allocation inside the period (open
    allocations up to now). Admin-access results are not counted."""

    @extend_schema(
        summary="Allocation hours per tenant, namespace, device class or GPU model",
        parameters=[
            AllocationHoursQuerySerializer,
            OpenApiParameter(
                "from", str, description="Start: a date (YYYY-MM-DD) or an ISO 8601 time."
            ),
            OpenApiParameter(
                "to", str, description="End: a date (included) or an ISO 8601 time (excluded)."
            ),
        ],
        responses=AllocationHoursSerializer,
    )
    def get(self, request: Request) -> Response:
        query = AllocationHoursQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        report = allocation_hours(
            AllocationRecord.objects.visible_to(request.user),
            query.validated_data["period_range"],
            query.validated_data["group_by"],
        )
        return Response(AllocationHoursSerializer(report).data)
