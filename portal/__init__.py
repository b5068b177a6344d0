"""DRA Portal project package and the tenancy domain (tenants, members, quotas, audit)."""

from portal.celery import app as celery_app

__all__ = ["celery_app"]
