"""The request's state machine: the declared moves, and that nothing else changes a state."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from claims.lifecycle.transitions import Move, transition
from claims.models import ClaimRequest
from portal.models import AuditEvent
from tests.factories import TenantFactory, UserFactory

State = ClaimRequest.State
ROOT = Path(__file__).resolve().parents[2]
APPS = ("claims", "mirror", "notifications", "portal", "home", "demo", "devices")


def test_every_state_is_reached_and_an_ended_request_never_moves():
    targets = {move.target for move in Move}
    sources = {source for move in Move for source in move.sources}
    assert targets == set(State.values) - {State.PENDING_APPROVAL}  # a request starts there
    assert not sources & set(ClaimRequest.ENDED_STATES)
    assert all(set(move.sources) <= set(State.values) for move in Move)


@pytest.mark.django_db
def test_a_move_from_another_state_changes_nothing_and_records_nothing():
    tenant = TenantFactory()
    request = ClaimRequest.objects.create(
        tenant=tenant,
        namespace="gpu-test1",
        name="one",
        device_class_name="gpu.nvidia.com",
        spec={},
        state=State.APPLIED,
        requested_by=UserFactory(),
    )
    assert transition(request, Move.APPROVE) is False
    assert transition(request, Move.START) is False
    request.refresh_from_db()
    assert request.state == State.APPLIED
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.CLAIM_STATE).exists()
    assert transition(request, Move.START_USE, reason="a pod runs") is True
    request.refresh_from_db()
    assert request.state == State.IN_USE
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CLAIM_STATE).count() == 1


def state_writes(root: Path, apps: tuple[str, ...]) -> list[str]:
    """``.update(state=...)`` / ``.state = ...`` on claim requests outside the transition
    table's module (the device-state refresh of the mirror is another model's state)."""
    found = []
    for app in apps:
        for path in sorted((root / app).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if "migrations" in path.parts or relative == "claims/lifecycle/transitions.py":
                continue
            text = path.read_text()
            if "ClaimRequest" not in text:
                continue
            for node in ast.walk(ast.parse(text)):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "update"
                    and any(keyword.arg == "state" for keyword in node.keywords)
                ):
                    found.append(f"{relative}:{node.lineno}")
                if isinstance(node, ast.Assign) and any(
                    isinstance(target, ast.Attribute) and target.attr == "state"
                    for target in node.targets
                ):
                    found.append(f"{relative}:{node.lineno}")
    return sorted(found, key=lambda where: (where.split(":")[0], int(where.split(":")[1])))


def test_only_the_transition_table_changes_a_requests_state(tmp_path):
    assert state_writes(ROOT, APPS) == []
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "sneaky.py").write_text(
        "from claims.models import ClaimRequest\n\n"
        "def go(pk):\n"
        "    ClaimRequest.objects.filter(pk=pk).update(state='applied')\n"
        "    request = ClaimRequest()\n"
        "    request.state = 'failed'\n"
    )
    assert state_writes(tmp_path, ("claims",)) == ["claims/sneaky.py:4", "claims/sneaky.py:6"]
