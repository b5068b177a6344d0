"""What a test does when something it needs is not on this machine: skip, saying so, or fail
where ``REQUIRE_SERVICES`` says everything must run (CI)."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def services_required() -> bool:
    return os.environ.get("REQUIRE_SERVICES", "") in ("1", "true", "yes")


def unavailable(reason: str) -> NoReturn:
    if services_required():
        pytest.fail(f"REQUIRE_SERVICES is set but {reason}")
    pytest.skip(reason)
