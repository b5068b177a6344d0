from django.apps import AppConfig


class ToolkitConfig(AppConfig):
    """The web toolkit (no models): its template tags are found through this app."""

    name = "toolkit"
    verbose_name = "Web toolkit"
