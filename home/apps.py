from django.apps import AppConfig


class HomeConfig(AppConfig):
    name = "home"
    verbose_name = "Home"

    def ready(self) -> None:
        from home.operations import ReadinessCollector
        from portal.metrics import register_collector

        register_collector(ReadinessCollector())
