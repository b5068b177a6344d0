"""The emulator answers as a real kube-apiserver did: the requests recorded from one by
`contract/record.py` (status code, reason, the gist of the message, `Warning` headers) are
replayed against the emulator. Needs no real cluster."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from apiemulator import Emulator

CONTRACT = Path(__file__).parent / "contract" / "real-1.36.3.json"


def _send(emulator: Emulator, case: dict[str, Any]) -> tuple[int, dict[str, Any], list[str]]:
    query = f"?{urlencode(case['query'])}" if case["query"] else ""
    body = case.get("body")
    request = urllib.request.Request(  # noqa: S310 - the emulator on loopback
        emulator.url + case["path"] + query,
        data=json.dumps(body).encode() if body is not None else None,
        method=case["method"],
        headers={"Content-Type": case.get("content_type", "application/json")},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            code, raw, headers = response.status, response.read(), response.headers
    except urllib.error.HTTPError as exc:
        code, raw, headers = exc.code, exc.read(), exc.headers
    return code, json.loads(raw or b"{}"), headers.get_all("Warning") or []


def _lookup(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def _differences(case: dict[str, Any], code: int, body: dict[str, Any], warnings: list[str]) -> str:
    real = case["answer"]
    got = {"code": code, "reason": body.get("reason", "")}
    problems = []
    if got != {"code": real["code"], "reason": real["reason"]}:
        problems.append(f"answered {got}, the real server {real['code']} {real['reason']!r}")
    if "gist" in case and case["gist"] not in body.get("message", ""):
        problems.append(f"message {body.get('message')!r} lacks {case['gist']!r}")
    if warnings != real.get("warnings", []):
        problems.append(f"warnings {warnings}, the real server {real.get('warnings', [])}")
    if "absent" in case and _lookup(body, case["absent"]) is not None:
        problems.append(f"{case['absent']} was stored")
    if "version" in real:
        ours = (body.get("major"), body.get("minor"))
        if ours != (real["version"]["major"], real["version"]["minor"]):
            problems.append(f"version {ours}, the real server {real['version']}")
    return "; ".join(problems)


def test_the_emulator_answers_the_recorded_requests_as_the_real_server_did() -> None:
    contract = json.loads(CONTRACT.read_text())
    # A history that starts at 1000, as if everything before had been compacted.
    with Emulator(port=0, initial_resource_version=1000) as emulator:
        emulator.load(contract["setup"])
        mismatches = []
        for case in contract["cases"]:
            problems = _differences(case, *_send(emulator, case))
            if problems:
                mismatches.append(f"{case['name']}: {problems}")
    assert mismatches == []
