"""The typed client's own rules, without a portal: retries on 429/503 as ``Retry-After`` says,
one idempotency key across a create's retries, and a clear error for a server that is not the
portal. (The commands against a live portal: ``test_cli_live.py``.)"""

from __future__ import annotations

import json
import os
import stat

import httpx
import pytest

from dra_portal_cli.contexts import ContextError, Store
from dra_portal_client import ConnectionFailed, NotFound, PortalClient, Unavailable


def portal(answers, seen, sleeps):
    """A client whose server answers ``answers`` in turn and records each request."""

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)

    return PortalClient(
        "http://portal.test", "drap_x", transport=httpx.MockTransport(handle), sleep=sleeps.append
    )


def ok(body):
    return httpx.Response(200, json=body)


def test_busy_answers_are_retried_after_the_wait_they_ask_for():
    seen, sleeps = [], []
    answers = [
        httpx.Response(503, headers={"Retry-After": "2"}, json={"error": {"status": 503}}),
        httpx.Response(429, headers={"Retry-After": "120"}, json={"error": {"status": 429}}),
        ok({"username": "bob"}),
    ]
    assert portal(answers, seen, sleeps).me()["username"] == "bob"
    assert sleeps == [2.0, 30.0]  # a long Retry-After is capped
    assert seen[0].headers["Authorization"] == "Bearer drap_x"


def test_a_create_keeps_its_idempotency_key_across_retries_and_gives_up_in_the_end():
    seen, sleeps = [], []
    busy = httpx.Response(
        503,
        json={"error": {"status": 503, "code": "unavailable", "message": "Away for a moment."}},
    )
    client = portal([busy] * 5, seen, sleeps)
    with pytest.raises(Unavailable) as caught:
        client.submit_claim({"namespace": "ns", "name": "a", "device_class": "gpu"})
    assert caught.value.message == "Away for a moment."
    keys = {request.headers["Idempotency-Key"] for request in seen}
    assert len(seen) == 5 and len(keys) == 1 and keys.pop()
    assert json.loads(seen[0].content) == {"namespace": "ns", "name": "a", "device_class": "gpu"}


def test_a_server_that_is_not_the_portal_is_named_as_such():
    html = httpx.Response(200, text="<html>hello</html>", headers={"Content-Type": "text/html"})
    with pytest.raises(ConnectionFailed, match="did not answer as a DRA Portal API"):
        portal([html], [], []).me()
    missing = httpx.Response(404, text="no", headers={"Content-Type": "text/plain"})
    with pytest.raises(ConnectionFailed, match="has no DRA Portal API"):
        portal([missing], [], []).me()
    api_404 = httpx.Response(404, json={"error": {"status": 404, "code": "not_found"}})
    with pytest.raises(NotFound, match="Not found: nodes/x"):
        portal([api_404], [], []).node("x")


def test_lists_follow_next_links_until_the_limit():
    first = ok({"count": 3, "next": "http://portal.test/api/v1/nodes/?cursor=b", "results": [1, 2]})
    second = ok({"count": 3, "next": None, "results": [3]})
    seen = []
    found, count = portal([first, second], seen, []).nodes(limit=None)
    assert (found, count) == ([1, 2, 3], 3)
    assert seen[1].url.params["cursor"] == "b"


def test_the_config_file_is_private_and_the_environment_overrides_it(tmp_path, monkeypatch):
    path = tmp_path / "dra-portal" / "config.yaml"
    store = Store(path)
    store.put("prod", "https://portal.example.com/", "drap_secret")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert Store(path).resolve().server == "https://portal.example.com"
    monkeypatch.setenv("DRA_PORTAL_TOKEN", "drap_from_ci")
    assert Store(path).resolve().token == "drap_from_ci"
    with pytest.raises(ContextError, match="No context named staging"):
        Store(path).resolve("staging")
    monkeypatch.delenv("DRA_PORTAL_TOKEN")
    Store(path).remove("prod")
    with pytest.raises(ContextError, match="Not signed in"):
        Store(path).resolve()
