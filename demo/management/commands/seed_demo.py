"""Creates the demo personas, tenants and quotas (idempotent: safe to run on every start).

Passwords are generated on first run, kept in ``var/demo_passwords.json`` (outside the
repository) and printed each time so a newcomer can sign in as any persona.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from portal.models import Membership, Tenant
from portal.services import tenants as tenant_services

GIB = 1024**3

PERSONAS = [
    # username, full name, staff, tenant slug, role
    ("admin", "Portal Admin", True, None, None),
    ("alice", "Alice Anders", False, "team-a", Membership.Role.TENANT_ADMIN),
    ("bob", "Bob Brandt", False, "team-a", Membership.Role.MEMBER),
    ("carol", "Carol Chen", False, "team-b", Membership.Role.MEMBER),
]

TENANTS: list[dict[str, Any]] = [
    {
        "name": "Team A",
        "slug": "team-a",
        "description": "Training team: full H100s and MIG slices.",
        "namespaces": ["gpu-test1", "gpu-test3", "gpu-test4", "gpu-memory"],
        # The demo cluster's claims in these namespaces already hold 5 GPUs in 5 claims: room
        # for the README's journey (bob tries a claim, alice approves his 3 H100s) and more.
        "quotas": [
            ("gpu.nvidia.com", 12, 960 * GIB, 10, dt.timedelta(days=7)),
            ("mig.nvidia.com", 16, 160 * GIB, 8, dt.timedelta(days=3)),
        ],
        # Whole H100s: more than 4 at once, or for longer than 3 days, or over the quota, wait
        # for alice (the demo submits one such request from bob).
        "approval": {
            "gpu.nvidia.com": {
                "approve_above_devices": 4,
                "approve_above_lease": dt.timedelta(days=3),
                "approve_over_quota": True,
            }
        },
    },
    {
        "name": "Team B",
        "slug": "team-b",
        "description": "Inference team.",
        "namespaces": ["gpu-test5", "gpu-test6", "cel-selector", "prioritized-alternatives"],
        "quotas": [
            ("gpu.nvidia.com", 4, 320 * GIB, 4, dt.timedelta(days=1)),
            ("gpu.example.com", 4, None, 4, None),
        ],
    },
]


class Command(BaseCommand):
    help = "Create (or refresh) the demo users admin, alice, bob, carol and their tenants."

    def handle(self, *args: Any, **options: Any) -> None:
        passwords = self._passwords()
        User = get_user_model()
        with transaction.atomic():
            tenants = {}
            for spec in TENANTS:
                tenant = Tenant.objects.filter(slug=spec["slug"]).first()
                tenant = tenant_services.save_tenant(
                    actor=None,
                    tenant=tenant,
                    namespaces=spec["namespaces"],
                    name=spec["name"],
                    slug=spec["slug"],
                    description=spec["description"],
                )
                for device_class, devices, memory, claims, lease in spec["quotas"]:
                    tenant_services.save_quota(
                        actor=None,
                        tenant=tenant,
                        device_class_name=device_class,
                        max_devices=devices,
                        max_device_memory=memory,
                        max_claims=claims,
                        max_lease=lease,
                        **spec.get("approval", {}).get(device_class, {}),
                    )
                tenants[spec["slug"]] = tenant
            for username, full_name, staff, tenant_slug, role in PERSONAS:
                first, last = full_name.split(" ", 1)
                user, _ = User.objects.get_or_create(username=username)
                user.first_name, user.last_name = first, last
                user.email = f"{username}@example.com"
                user.is_staff = user.is_superuser = staff
                user.set_password(passwords[username])
                user.save()
                if tenant_slug:
                    assert role is not None  # a persona in a tenant has a role there
                    tenant_services.set_member(
                        actor=None, tenant=tenants[tenant_slug], user=user, role=role
                    )
        self.stdout.write(self.style.SUCCESS("Demo users (sign in at http://127.0.0.1:8000/):"))
        for username, _, staff, tenant_slug, role in PERSONAS:
            if staff:
                where = "portal admin"
            else:
                assert role is not None  # every persona but the portal admin has one
                where = f"{role.label.lower()} of {tenant_slug}"
            self.stdout.write(f"  {username:6} {passwords[username]}   ({where})")

    def _passwords(self) -> dict[str, str]:
        path = settings.VAR_DIR / "demo_passwords.json"
        stored: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
        for username, *_ in PERSONAS:
            stored.setdefault(username, secrets.token_urlsafe(9))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(stored, indent=2))
        path.chmod(0o600)
        return stored
