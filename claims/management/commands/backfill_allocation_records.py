"""``manage.py backfill_allocation_records``: open the allocation history of claims allocated
before the portal kept one, and close records the mirror no longer backs.

Safe to run any time and twice (``AllocationRecord.objects.reconcile``): run it once after
upgrading to the version that added ``claims.AllocationRecord``. Records it opens start at the
claim's ``allocationTimestamp`` when the allocation has one, else now.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from claims.models import AllocationRecord


class Command(BaseCommand):
    help = "Open allocation records for allocated claims that have none; close orphaned ones."

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            opened, closed = AllocationRecord.objects.reconcile()
        self.stdout.write(f"Opened {opened} allocation records, closed {closed}.")
