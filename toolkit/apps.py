from django.apps import AppConfig


class ToolkitConfig(AppConfig):
    """The web toolkit (no models): its template tags are found through this app."""

    name = "toolkit"
    verbose_name = "Web toolkit"

    def ready(self) -> None:
        from toolkit import lookups  # noqa: F401 - registers ``__any``
