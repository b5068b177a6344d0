from django.apps import AppConfig


class MirrorConfig(AppConfig):
    name = "mirror"
    verbose_name = "Cluster mirror"

    def ready(self) -> None:
        # Register the Celery tasks at start-up: the claim services enqueue them by name.
        from mirror import tasks  # noqa: F401
