"""``manage.py allocate``: JSON Lines in, one JSON line out per case, bad lines reported."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from django.core.management import call_command

from .cases import case

ROOT = Path(__file__).resolve().parents[2]


def _call(text, tmp_path=None):
    out = io.StringIO()
    if tmp_path is None:
        stdin = sys.stdin
        sys.stdin = io.StringIO(text)
        try:
            call_command("allocate", stdout=out)
        finally:
            sys.stdin = stdin
    else:
        path = tmp_path / "cases.jsonl"
        path.write_text(text)
        call_command("allocate", "--input", str(path), stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_it_answers_each_line_in_order_and_survives_bad_lines(tmp_path):
    lines = [
        json.dumps(case()),
        "{not json",
        json.dumps([1, 2]),
        json.dumps(dict(case(), name="second")),
    ]
    outputs = _call("\n".join(lines) + "\n", tmp_path)
    assert [item["status"] for item in outputs] == ["allocated", "error", "error", "allocated"]
    assert outputs[1]["name"] is None
    assert outputs[3]["name"] == "second"


def test_it_reads_stdin():
    outputs = _call(json.dumps(dict(case(), name="from-stdin")) + "\n")
    assert outputs == [{**outputs[0], "name": "from-stdin", "status": "allocated"}]


def test_it_runs_as_a_subprocess_without_a_database():
    body = json.dumps(dict(case(), name="sub")) + "\n"
    completed = subprocess.run(
        [sys.executable, "manage.py", "allocate"],
        input=body,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    assert json.loads(completed.stdout.splitlines()[0])["status"] == "allocated"


def test_it_refuses_an_old_kubernetes_version_and_unknown_features_per_case():
    lines = [
        json.dumps(dict(case(version="1.20"), name="old")),
        json.dumps(dict(case(features={"adminAcess": True}), name="typo")),
        json.dumps(dict(case(claims=[]), name="empty")),
        json.dumps(dict(case(), name="fine")),
    ]
    outputs = _call("\n".join(lines) + "\n")
    assert outputs[:3] == [
        {
            "name": "old",
            "status": "error",
            "error": "kubernetesVersion: '1.20' is not supported: DRA's resource.k8s.io/v1 API "
            "needs Kubernetes 1.34 or newer",
        },
        {
            "name": "typo",
            "status": "error",
            "error": "features: unknown feature 'adminAcess' (known: adminAccess, prioritizedList, "
            "partitionableDevices, consumableCapacity, deviceTaints, deviceBinding, deviceStatus)",
        },
        {"name": "empty", "status": "error", "error": "no claims to allocate"},
    ]
    assert outputs[3]["status"] == "allocated"


def test_its_help_describes_the_input_and_output_lines():
    completed = subprocess.run(
        [sys.executable, "manage.py", "allocate", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    text = completed.stdout
    assert "JSON Lines" in text
    for field in ("kubernetesVersion", "features", "deviceClasses", "resourceSlices", "claims"):
        assert field in text
    assert '"status": "allocated"' in text
    assert '"status": "unsatisfiable"' in text
    assert '"status": "error", "error"' in text
    assert "1.34" in text


def test_the_plain_form_answers_without_starting_django(tmp_path):
    # A settings module that cannot be imported stops anything that starts Django.
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(dict(case(), name="plain")) + "\n" + "[" * 1_000_000 + "\n")
    completed = subprocess.run(
        [sys.executable, "manage.py", "allocate", "--input", str(path), "--timeout=5"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=True,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "no_such_settings_module"},
    )
    outputs = [json.loads(line) for line in completed.stdout.splitlines()]
    assert [output["status"] for output in outputs] == ["allocated", "error"]
    assert outputs[0]["name"] == "plain"
    assert outputs[1]["error"] == "invalid JSON: nested deeper than 100 levels"


def test_other_arguments_go_to_the_django_command():
    completed = subprocess.run(
        [sys.executable, "manage.py", "allocate", "--verbosity", "2", "--timeout", "5"],
        input=json.dumps(dict(case(), name="django")) + "\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    assert json.loads(completed.stdout.splitlines()[0])["name"] == "django"
    refused = subprocess.run(
        [sys.executable, "manage.py", "allocate", "--timeout", "soon"],
        input="",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert refused.returncode != 0
    assert "invalid float value: 'soon'" in refused.stderr
