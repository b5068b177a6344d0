from django.apps import AppConfig


class MirrorConfig(AppConfig):
    name = "mirror"
    verbose_name = "Cluster mirror"

    def ready(self) -> None:
        # Register the Celery tasks at start-up: the claim services enqueue them by name.
        from mirror import backstop_tasks, tasks  # noqa: F401
        from mirror.metrics import MirrorCollector
        from mirror.signals import cluster_replaced
        from portal.metrics import register_collector
        from portal.signals import quotas_changed

        register_collector(MirrorCollector())

        quotas_changed.connect(
            backstop_tasks.follow_quota_changes, dispatch_uid="mirror.backstop_tasks"
        )
        cluster_replaced.connect(
            backstop_tasks.check_replaced_cluster, dispatch_uid="mirror.backstop_tasks"
        )
