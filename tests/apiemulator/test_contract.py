"""The emulator answers as a real kube-apiserver did: the requests recorded from one by
`contract/record.py` (status code, reason, the gist of the message, `Warning` headers) are
replayed against the emulator. Needs no real cluster."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from apiemulator import Emulator

CONTRACT = Path(__file__).parent / "contract" / "real-1.36.3.json"


def _request(emulator: Emulator, case: dict[str, Any]) -> tuple[int, bytes, Any]:
    """Replay one recorded request: the status code, body and headers answered."""
    query = f"?{urlencode(case['query'])}" if case["query"] else ""
    body = case.get("body")
    headers = {"Content-Type": case.get("content_type", "application/json")}
    if "accept" in case:
        headers["Accept"] = case["accept"]
    request = urllib.request.Request(  # noqa: S310 - the emulator on loopback
        emulator.url + case["path"] + query,
        data=json.dumps(body).encode() if body is not None else None,
        method=case["method"],
        headers=headers,
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, response.read(), response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers


def _send(emulator: Emulator, case: dict[str, Any]) -> tuple[int, dict[str, Any], list[str]]:
    code, raw, headers = _request(emulator, case)
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


# -- Tables: what `kubectl get` shows ------------------------------------------------------

# An age as `duration.HumanDuration` prints it: relative, so only its form is compared.
AGE = re.compile(r"^(\d+[smhdy]){1,2}$|^<unknown>$")
# The media types a 406 lists: the emulator speaks JSON only, the real server more.
ACCEPTED = re.compile(r"^(only the following media types are accepted: )(.*)$")
# What makes an object the one the real server answered (its uid and times are kept when
# loaded; an object created by a case gets its own).
IDENTITY = ("name", "namespace", "labels", "annotations", "finalizers", "ownerReferences")


def _ask(emulator: Emulator, case: dict[str, Any]) -> dict[str, Any]:
    code, raw, headers = _request(emulator, case)
    answer: dict[str, Any] = {"code": code, "contentType": headers.get("Content-Type", "")}
    if case["query"].get("watch"):
        answer["events"] = [json.loads(line) for line in raw.splitlines() if line.strip()]
    else:
        answer["body"] = json.loads(raw) if raw else None
    return answer


def _same_object(real: Any, ours: Any, where: str) -> list[str]:
    """A row's or a list item's object: the same kind, and the same object."""
    if real is None or ours is None:
        return [] if real == ours else [f"{where}: object {ours!r}, the real server {real!r}"]
    problems = []
    for key in ("kind", "apiVersion"):
        if real.get(key) != ours.get(key):
            problems.append(f"{where}: {key} {ours.get(key)!r}, the real server {real.get(key)!r}")
    real_meta, our_meta = real.get("metadata") or {}, ours.get("metadata") or {}
    for key in (*IDENTITY, "deletionTimestamp"):
        if (key in real_meta) != (key in our_meta) or (
            key != "deletionTimestamp" and real_meta.get(key) != our_meta.get(key)
        ):
            problems.append(
                f"{where}: metadata.{key} {our_meta.get(key)!r} vs {real_meta.get(key)!r}"
            )
    for key in ("spec", "status"):
        if real.get(key) != ours.get(key):
            problems.append(f"{where}: {key} differs")
    return problems


def _same_table(real: dict[str, Any], ours: dict[str, Any], where: str) -> list[str]:
    """Columns exactly; cells exactly but ages (relative), by their form."""
    problems = []
    for key in ("kind", "apiVersion"):
        if real.get(key) != ours.get(key):
            problems.append(f"{where}: {key} {ours.get(key)!r}, the real server {real.get(key)!r}")
    real_meta, our_meta = real.get("metadata") or {}, ours.get("metadata") or {}
    if sorted(real_meta) != sorted(our_meta) or real_meta.get("remainingItemCount") != our_meta.get(
        "remainingItemCount"
    ):
        problems.append(f"{where}: metadata {our_meta}, the real server {real_meta}")
    if real.get("columnDefinitions") != ours.get("columnDefinitions"):
        problems.append(
            f"{where}: columns {ours.get('columnDefinitions')}, "
            f"the real server {real.get('columnDefinitions')}"
        )
    names = [c["name"] for c in real.get("columnDefinitions") or []]
    real_rows, our_rows = real.get("rows") or [], ours.get("rows") or []
    if len(real_rows) != len(our_rows):
        return [*problems, f"{where}: {len(our_rows)} rows, the real server {len(real_rows)}"]
    for real_row, our_row in zip(real_rows, our_rows, strict=True):
        row = f"{where} row {real_row['cells'][0]!r}"
        real_cells, our_cells = real_row["cells"], our_row["cells"]
        if len(real_cells) != len(our_cells):
            problems.append(f"{row}: cells {our_cells}, the real server {real_cells}")
            continue
        for index, (real_cell, our_cell) in enumerate(zip(real_cells, our_cells, strict=True)):
            column = names[index] if index < len(names) else ""
            if column == "Age" or (not names and AGE.match(str(real_cell))):
                if not AGE.match(str(our_cell)):
                    problems.append(f"{row}: age {our_cell!r} is not an age")
            elif real_cell != our_cell:
                problems.append(f"{row} {column}: {our_cell!r}, the real server {real_cell!r}")
        if real_row.get("conditions") != our_row.get("conditions"):
            problems.append(f"{row}: conditions {our_row.get('conditions')}")
        problems += _same_object(real_row.get("object"), our_row.get("object"), row)
    return problems


def _same_status(real: dict[str, Any], ours: dict[str, Any], where: str) -> list[str]:
    if real.get("reason") != ours.get("reason"):
        return [f"{where}: reason {ours.get('reason')!r}, the real server {real.get('reason')!r}"]
    real_message, our_message = real.get("message", ""), ours.get("message", "")
    real_types, our_types = ACCEPTED.match(real_message), ACCEPTED.match(our_message)
    if real_types and our_types:
        ours_listed = set(our_types.group(2).split(", "))
        if ours_listed and ours_listed <= set(real_types.group(2).split(", ")):
            return []
    elif real_message == our_message:
        return []
    return [f"{where}: message {our_message!r}, the real server {real_message!r}"]


def _same_body(real: Any, ours: Any, where: str) -> list[str]:
    if not isinstance(real, dict) or not isinstance(ours, dict):
        return [] if type(real) is type(ours) else [f"{where}: {ours!r}, the real server {real!r}"]
    if real.get("kind") != ours.get("kind"):
        return [f"{where}: a {ours.get('kind')}, the real server a {real.get('kind')}"]
    if real.get("kind") == "Table":
        return _same_table(real, ours, where)
    if real.get("kind") == "Status":
        return _same_status(real, ours, where)
    if "items" in real:
        problems = []
        if len(real["items"]) != len(ours.get("items") or []):
            return [f"{where}: {len(ours.get('items') or [])} items, the real {len(real['items'])}"]
        for index, (real_item, our_item) in enumerate(
            zip(real["items"], ours["items"], strict=True)
        ):
            if "kind" in real_item:
                problems += _same_object(real_item, our_item, f"{where} item {index}")
            elif real_item["metadata"]["name"] != our_item["metadata"]["name"]:
                problems.append(f"{where} item {index}: {our_item['metadata']['name']}")
        return problems
    return _same_object(real, ours, where) if "metadata" in real else []


def _table_differences(case: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    real, where = case["answer"], case["name"]
    if real["code"] != ours["code"]:
        body = ours.get("body") or {}
        return [
            f"{where}: answered {ours['code']} {body.get('message', '')!r}, the real {real['code']}"
        ]
    problems = []
    if real["contentType"] != ours["contentType"]:
        problems.append(
            f"{where}: Content-Type {ours['contentType']!r}, the real {real['contentType']!r}"
        )
    if "events" in real:
        real_events, our_events = real["events"], ours.get("events") or []
        if [e["type"] for e in real_events] != [e["type"] for e in our_events]:
            return [*problems, f"{where}: events {[e['type'] for e in our_events]}"]
        for index, (real_event, our_event) in enumerate(zip(real_events, our_events, strict=True)):
            problems += _same_body(real_event["object"], our_event["object"], f"{where} {index}")
        return problems
    return problems + _same_body(real["body"], ours["body"], where)


def test_the_emulator_answers_table_requests_as_the_real_server_did() -> None:
    """Every kind kubectl lists, each the way kubectl asks (and as `-o wide`, `--sort-by`,
    `includeObject` and `-w` ask), and what the real server would not convert."""
    contract = json.loads(CONTRACT.read_text())
    tables = contract["tables"]
    with Emulator(port=0, initial_resource_version=1000) as emulator:
        emulator.load(contract["setup"])
        emulator.load(tables["objects"])
        mismatches = []
        for case in tables["cases"]:
            mismatches += _table_differences(case, _ask(emulator, case))
    assert mismatches == []


def _printed(output: str) -> list[dict[str, str]]:
    """`kubectl get`'s columns, cut where the header's names start (names hold one space at
    most, columns are three apart)."""
    header, *lines = output.splitlines()
    starts = [m.start() for m in re.finditer(r"(?:^|(?<=\s{2}))\S", header)]
    ends = [*starts[1:], None]
    names = [header[s:e].strip() for s, e in zip(starts, ends, strict=True)]
    return [
        {name: line[s:e].strip() for name, s, e in zip(names, starts, ends, strict=True)}
        for line in lines
    ]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl on PATH")
def test_kubectl_get_prints_from_the_emulator_what_it_printed_from_the_real_server(
    tmp_path: Path,
) -> None:
    contract = json.loads(CONTRACT.read_text())
    tables = contract["tables"]
    kubeconfig = tmp_path / "kubeconfig"
    with Emulator(port=0, initial_resource_version=1000) as emulator:
        emulator.load(contract["setup"])
        emulator.load(tables["objects"])
        emulator.kubeconfig(kubeconfig)
        mismatches = []
        for command in tables["kubectl"]["outputs"]:
            printed = subprocess.run(
                ["kubectl", "--kubeconfig", str(kubeconfig), *command["args"]],
                capture_output=True,
                text=True,
                check=True,
                timeout=30,
            ).stdout
            real, ours = _printed(command["stdout"]), _printed(printed)
            shown = " ".join(command["args"])
            if [list(r) for r in real] != [list(r) for r in ours] or len(real) != len(ours):
                mismatches.append(
                    f"kubectl {shown}:\n{printed}the real server:\n{command['stdout']}"
                )
                continue
            for real_row, our_row in zip(real, ours, strict=True):
                for column, real_cell in real_row.items():
                    same = (
                        AGE.match(our_row[column])
                        if column == "AGE"
                        else our_row[column] == real_cell
                    )
                    if not same:
                        mismatches.append(
                            f"kubectl {shown}: {column} {our_row[column]!r}, real {real_cell!r}"
                        )
    assert mismatches == []
