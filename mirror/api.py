"""``/api/v1/mirror-status/``: each watcher's progress, for portal admins."""

from __future__ import annotations

from rest_framework import serializers, viewsets
from rest_framework.permissions import IsAdminUser

from mirror.models import MirrorStatus

__all__ = ["ROUTES", "MirrorStatusSerializer", "MirrorStatusViewSet"]


class MirrorStatusSerializer(serializers.ModelSerializer):
    seconds_since_seen = serializers.FloatField(
        read_only=True,
        allow_null=True,
        help_text="Seconds since the last event, bookmark or list of this kind; null if never.",
    )
    freshness = serializers.ChoiceField(
        choices=MirrorStatus.Freshness.choices,
        read_only=True,
        help_text="fresh; stale after MIRROR_STALE_SECONDS of silence; very_stale after twice "
        "that (or never heard from).",
    )
    is_stale = serializers.BooleanField(
        read_only=True, help_text="The rows of this kind may be missing changes."
    )

    class Meta:
        model = MirrorStatus
        fields = [
            "kind",
            "state",
            "freshness",
            "is_stale",
            "seconds_since_seen",
            "last_seen_at",
            "cluster_uid",
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
