from django.apps import AppConfig


class MirrorConfig(AppConfig):
    name = "mirror"
    verbose_name = "Cluster mirror"

    def ready(self) -> None:
        # Register the Celery tasks at start-up (the beat schedule names them).
        from claims.signals import request_applied
        from mirror import backstop_tasks, following, tasks  # noqa: F401
        from mirror.metrics import MirrorCollector
        from mirror.signals import cluster_replaced
        from portal.metrics import register_collector
        from portal.signals import quotas_changed

        register_collector(MirrorCollector())

        quotas_changed.connect(
            backstop_tasks.follow_quota_changes, dispatch_uid="mirror.backstop_tasks"
        )
        request_applied.connect(following.follow_applied, dispatch_uid="mirror.following")
        cluster_replaced.connect(
            backstop_tasks.check_replaced_cluster, dispatch_uid="mirror.backstop_tasks"
        )
