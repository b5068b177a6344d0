"""``/api/v1/mirror-status/``: each watcher's progress, for portal admins."""

from __future__ import annotations

from rest_framework import serializers, viewsets
from rest_framework.permissions import IsAdminUser

from mirror.models import MirrorStatus

__all__ = ["ROUTES", "MirrorStatusSerializer", "MirrorStatusViewSet"]


class MirrorStatusSerializer(serializers.ModelSerializer):
    class Meta:
        model = MirrorStatus
        fields = [
            "kind",
            "state",
            "resource_version",
            "events_total",
            "relists_total",
            "error_count",
            "last_error",
            "last_error_at",
            "last_event_at",
            "last_list_at",
            "last_list_seconds",
            "lag_seconds",
            "heartbeat_at",
            "watcher",
        ]


class MirrorStatusViewSet(viewsets.ReadOnlyModelViewSet):
    """Each watcher's progress: portal admins only."""

    serializer_class = MirrorStatusSerializer
    permission_classes = [IsAdminUser]
    lookup_field = "kind"
    queryset = MirrorStatus.objects.all()


ROUTES = [("mirror-status", MirrorStatusViewSet, "mirrorstatus")]
