from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"
    verbose_name = "Notifications"

    def ready(self) -> None:
        # Listen to claim request changes, and register the Celery tasks they enqueue by name.
        from notifications import receivers, tasks  # noqa: F401
