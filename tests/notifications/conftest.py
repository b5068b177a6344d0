"""Notification tests: claim requests as rows, a loopback webhook receiver, team-a's webhook."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.utils import timezone

from claims.models import ClaimRequest
from portal.services.tenants import save_tenant

SECRET = "whsec_test-secret-of-team-a"


def make_request(user, tenant, name="held", state=ClaimRequest.State.APPLIED, **fields):
    """A claim request row of ``tenant`` requested by ``user``; lease 7 days unless given."""
    now = timezone.now()
    values = {
        "namespace": tenant.namespace_names[0],
        "device_class_name": "gpu.nvidia.com",
        "mode": "scheduler",
        "form": {"count": 1},
        "spec": {"devices": {"requests": []}},
        "lease": timedelta(days=7),
        "expires_at": now + timedelta(days=7),
        **fields,
    }
    return ClaimRequest.objects.create(
        tenant=tenant, name=name, state=state, requested_by=user, **values
    )


@dataclass
class Received:
    headers: Any  # case-insensitive, as HTTP headers are
    body: bytes

    @property
    def payload(self) -> dict[str, Any]:
        return json.loads(self.body)


@dataclass
class Receiver:
    """A real HTTP server on 127.0.0.1 that answers ``statuses`` in turn (the last one
    repeats) and records what it was sent."""

    url: str
    statuses: list[int] = field(default_factory=lambda: [200])
    received: list[Received] = field(default_factory=list)

    def answer(self) -> int:
        return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]


@pytest.fixture
def receiver(settings) -> Iterator[Receiver]:
    # It listens on loopback, standing in for a public receiver.
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    state = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state.received.append(Received(self.headers, body))
            status = state.answer()
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/dra"
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def team_a_webhook(team_a, receiver, root):
    """team-a's webhook points at the loopback receiver, signed with ``SECRET``."""
    save_tenant(actor=root, tenant=team_a, webhook_url=receiver.url, webhook_secret=SECRET)
    team_a.refresh_from_db()
    return receiver
