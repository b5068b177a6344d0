from django.apps import AppConfig


class ClaimsConfig(AppConfig):
    name = "claims"
    verbose_name = "Claims"

    def ready(self) -> None:
        from claims import signals  # noqa: F401  (connects the tenant-link receiver)
        from claims.configuration import CLASS_POLICIES
        from claims.lifecycle import beat, tasks  # noqa: F401  (registers the Celery tasks)
        from claims.metrics import ClaimRequestCollector
        from claims.usage import tasks as usage_tasks  # noqa: F401
        from portal.metrics import register_collector
        from portal.services.configuration import register_section

        register_section(CLASS_POLICIES)  # configuration as code: the class_policies section

        register_collector(ClaimRequestCollector())
