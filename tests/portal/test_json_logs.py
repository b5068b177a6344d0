"""``LOG_FORMAT=json``: one JSON object per line with time, level, logger, message, request id,
user and path; ``LOG_REQUESTS`` adds one line per request."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from portal.logs import ContextFilter, JsonFormatter

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def json_lines():
    """The lines the ``portal.access`` logger writes through the JSON formatter."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(ContextFilter())
    logger = logging.getLogger("portal.access")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.mark.django_db
def test_each_request_is_logged_with_its_id_user_and_path(client_as, bob, settings, json_lines):
    settings.LOG_REQUESTS = True
    client_as(bob).get("/claims/", HTTP_X_REQUEST_ID="trace-42")
    [line] = json_lines()
    assert line["level"] == "INFO"
    assert line["logger"] == "portal.access"
    assert line["message"].startswith("GET /claims/ 200 ")
    assert line["time"].endswith("+00:00")
    assert line["request_id"] == "trace-42"
    assert line["user"] == bob.pk
    assert line["path"] == "/claims/"
    assert line["method"] == "GET"
    assert line["status"] == 200
    assert line["view"] == "resourceclaim-list"
    assert line["task_name"] is None


@pytest.mark.django_db
def test_an_anonymous_request_has_no_user(client, settings, json_lines):
    settings.LOG_REQUESTS = True
    client.get("/login/")
    [line] = json_lines()
    assert line["user"] is None
    assert len(line["request_id"]) == 32


@pytest.mark.django_db
def test_requests_are_not_logged_unless_asked(client, settings, json_lines):
    settings.LOG_REQUESTS = False
    client.get("/login/")
    assert json_lines() == []


def _log_from_manage_py(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LOG_", "DATABASE_URL"))}
    clean.update(env)
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "import logging\n"
            "try:\n    1 / 0\n"
            "except ZeroDivisionError:\n"
            "    logging.getLogger('portal.check').exception('it broke: %s', 'why')",
        ],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stderr


def test_log_format_json_makes_every_line_json():
    [line] = [json.loads(text) for text in _log_from_manage_py(LOG_FORMAT="json").splitlines()]
    assert line["message"] == "it broke: why"
    assert line["level"] == "ERROR"
    assert line["logger"] == "portal.check"
    assert "ZeroDivisionError" in line["exception"]
    assert line["request_id"] is None


def test_the_default_format_is_text():
    assert _log_from_manage_py().splitlines()[0].endswith("ERROR portal.check: it broke: why")


def test_an_unknown_log_format_is_a_clear_error():
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LOG_")}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**clean, "LOG_FORMAT": "xml"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "LOG_FORMAT='xml': use text or json." in result.stderr
