from django.apps import AppConfig


class DemoConfig(AppConfig):
    """``make demo``: the emulated cluster, its simulated scheduler, the personas and their
    claims (``manage.py demo``, ``manage.py seed_demo``). Nothing else imports it."""

    name = "demo"
    verbose_name = "Demo"
