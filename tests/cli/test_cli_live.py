"""``dra-portal`` against a live portal: gunicorn on PostgreSQL, the watchers, the allocator and a
worker on a Redis of their own, the API emulator as the cluster (``harness.stack``). Every
command runs as a user runs it (``python -m dra_portal_cli``, its own process, its own config
file), and its exit code is part of what is checked. About a minute: marked slow."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
import venv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from harness.fixtures import fixture_objects
from harness.stack import Stack, missing_redis_server, on_loopback, wait_for
from tests.unavailable import unavailable

pytestmark = pytest.mark.slow

CLI_PACKAGE = Path(__file__).resolve().parents[2] / "cli"
H100 = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"'


@dataclass
class Portal:
    stack: Stack
    tokens: dict[str, str]
    home: Path

    def cli(self, *args: str, token: str | None = None, **env: str) -> subprocess.CompletedProcess:
        """One command, as its own process, with this module's config file."""
        environment = {
            key: value for key, value in os.environ.items() if not key.startswith("DRA_PORTAL")
        }
        environment.update(DRA_PORTAL_CONFIG=str(self.home / "config.yaml"), **env)
        if token is not None:
            environment.update(DRA_PORTAL_SERVER=self.stack.url, DRA_PORTAL_TOKEN=token)
        return subprocess.run(
            [sys.executable, "-m", "dra_portal_cli", *args],
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def json(self, *args: str, **kwargs: str) -> object:
        done = self.cli(*args, "-o", "json", **kwargs)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture(scope="module")
def portal(tmp_path_factory) -> Iterator[Portal]:
    if reason := missing_redis_server():
        unavailable(reason)
    var = tmp_path_factory.mktemp("cli")
    with on_loopback(var, fixture_objects()) as (stack, _emulator):
        stack.prepare()
        tokens = json.loads(
            stack.shell(
                "import json\n"
                "from django.contrib.auth.models import User\n"
                "from portal.services.api_tokens import issue_api_token\n"
                "print(json.dumps({name: issue_api_token(user=User.objects.get(username=name),\n"
                "    name='cli', lifetime=None).secret for name in ('alice', 'admin', 'carol')}))"
            )
        )
        tokens["bob"] = stack.token
        stack.web(workers=2)
        stack.watchers("watchers")
        stack.wait_until_mirrored()
        stack.worker("allocator", "allocations")
        stack.worker("worker", "default", concurrency=2)
        home = var / "home"
        portal = Portal(stack, tokens, home)
        for name in ("bob", "alice", "admin"):
            signed_in = portal.cli(
                "login", "--server", stack.url, "--token", tokens[name], "--name", name
            )
            assert signed_in.returncode == 0, signed_in.stderr
        assert portal.cli("contexts", "use", "bob").returncode == 0
        yield portal


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_sign_in_contexts_and_each_bad_sign_in_has_its_own_line_and_code(portal):
    config = portal.home / "config.yaml"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert portal.tokens["bob"] not in portal.cli("contexts", "list").stdout
    whoami = portal.cli("whoami")
    assert whoami.returncode == 0 and "bob on" in whoami.stdout and "team-a" in whoami.stdout
    assert "alice" in portal.cli("--context", "alice", "whoami").stdout
    listed = portal.cli("contexts", "list").stdout
    assert "* bob" in " ".join(listed.split()) and "admin" in listed

    nowhere = portal.cli("login", "--server", f"http://127.0.0.1:{free_port()}", "--token", "x")
    assert nowhere.returncode == 3 and nowhere.stderr.startswith("error: Cannot reach")
    wrong = portal.cli("whoami", token="drap_wrong")
    assert wrong.returncode == 4 and "Invalid or revoked API token" in wrong.stderr
    portal.stack.shell(
        "import datetime as dt\n"
        "from django.utils import timezone\n"
        "from portal.models import ApiToken\n"
        "ApiToken.objects.filter(user__username='carol').update(\n"
        "    expires_at=timezone.now() - dt.timedelta(minutes=1))"
    )
    expired = portal.cli("whoami", token=portal.tokens["carol"])
    assert (expired.returncode, expired.stderr.count("\n")) == (4, 1)
    assert "expired" in expired.stderr and "Traceback" not in expired.stderr
    assert portal.cli("--context", "nobody", "whoami").returncode == 4
    assert portal.cli("export").returncode == 5  # bob is no portal admin
    missing = portal.cli("nodes", "get", "no-such-node")
    assert (missing.returncode, missing.stderr) == (
        6,
        "error: Not found: nodes/no-such-node (or not yours to see).\n",
    )


def test_cluster_reads_in_every_format_with_paging(portal):
    nodes = portal.json("nodes", "list", "--all")
    assert nodes and all("device_count" in node for node in nodes)
    table = portal.cli("nodes", "list").stdout.splitlines()
    assert table[0].split()[:3] == ["NAME", "READY", "DEVICES"]
    assert {line.split()[0] for line in table[1:]} == {node["name"] for node in nodes}
    assert portal.json("nodes", "get", nodes[0]["name"])["name"] == nodes[0]["name"]

    two = portal.json("devices", "list", "--limit", "2")
    everything = portal.json("devices", "list", "--all", "--class", "gpu.nvidia.com")
    assert len(two) == 2 and len(everything) > 2
    shown = portal.cli("devices", "list", "--limit", "2").stdout
    assert f"Showing 2 of {portal.json('devices', 'list', '--all').__len__()}" in shown
    device = everything[0]
    key = f"{device['driver']}/{device['pool']}/{device['name']}"
    assert portal.json("devices", "get", key)["name"] == device["name"]
    free = portal.json("devices", "list", "--all", "--class", "gpu.nvidia.com", "--state", "free")
    assert free and all(d["state"] == "free" for d in free)
    classes = yaml.safe_load(portal.cli("classes", "list", "-o", "yaml").stdout)
    assert "gpu.nvidia.com" in {c["name"] for c in classes}
    assert "SELECTORS" in portal.cli("classes", "list", "-o", "wide").stdout


def test_a_claim_from_a_file_dry_run_then_waited_for_renewed_and_released(portal, tmp_path):
    claim = tmp_path / "claim.yaml"
    claim.write_text(
        yaml.safe_dump(
            {
                "namespace": "gpu-test1",
                "name": "cli-train",
                "device_class": "gpu.nvidia.com",
                "selectors": [H100],
                "lease": "2h",
            }
        )
    )
    fits = portal.cli("claim", "submit", "-f", str(claim), "--dry-run")
    assert fits.returncode == 0 and fits.stdout.startswith("Fits now on"), fits.stdout
    impossible = 'device.attributes["gpu.nvidia.com"].productName == "No Such GPU"'
    no = portal.cli("claim", "submit", "-f", str(claim), "--selector", impossible, "--dry-run")
    assert no.returncode == 9 and "stopped at selectors" in no.stdout

    submitted = portal.cli("claim", "submit", "-f", str(claim), "--wait", "-o", "json")
    assert submitted.returncode == 0, submitted.stderr
    request = json.loads(submitted.stdout)
    assert request["state"] in ("applied", "in_use") and request["devices"]
    assert portal.json("claim", "get", "cli-train", "-n", "gpu-test1")["id"] == request["id"]
    assert "cli-train" in portal.cli("claim", "list", "--state", request["state"]).stdout
    renewed = portal.cli("claim", "renew", "cli-train", "--lease", "3h")
    assert renewed.returncode == 0 and "expires" in renewed.stdout
    assert (
        portal.cli("claim", "release", "cli-train").stdout == "gpu-test1/cli-train is releasing.\n"
    )
    wait_for(
        lambda: portal.json("claim", "get", request["id"])["state"] == "released",
        30,
        "the claim released",
    )
    again = portal.cli("claim", "release", "cli-train")
    assert (again.returncode, again.stdout) == (0, "gpu-test1/cli-train is released.\n")
    ended = portal.cli("claim", "withdraw", "cli-train")
    assert ended.returncode == 7 and "it has ended" in ended.stderr
    refused = portal.cli("claim", "submit", "-f", str(claim), "--name", "Bad Name", "--count", "40")
    assert refused.returncode == 1
    assert "name: Enter a Kubernetes object name" in refused.stderr
    assert "count: Ask for 1 to 32 devices" in refused.stderr


def _waiting(portal: Portal, name: str, lease: str) -> subprocess.Popen:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("DRA_PORTAL")}
    environment["DRA_PORTAL_CONFIG"] = str(portal.home / "config.yaml")
    process = subprocess.Popen(
        [sys.executable, "-m", "dra_portal_cli", "claim", "submit", "-n", "gpu-test1"]
        + ["--name", name, "--class", "gpu.nvidia.com", "--selector", H100, "--lease", lease]
        + ["--wait", "--wait-timeout", "90", "--interval", "0.3", "-o", "json"],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def pending() -> bool:
        done = portal.cli("claim", "get", name, "-n", "gpu-test1", "-o", "json")
        return done.returncode == 0 and json.loads(done.stdout)["state"] == "pending_approval"

    wait_for(pending, 30, f"{name} waiting for approval")
    return process


def test_submit_wait_follows_a_request_through_approval_and_denial(portal):
    # team-a's quota sends leases over 3 days to a tenant admin: alice, in her own context.
    waiting = _waiting(portal, "cli-long", "5d")
    assert "cli-long" in portal.cli("--context", "alice", "approvals", "list").stdout
    assert portal.cli("approvals", "approve", "cli-long", "-n", "gpu-test1").returncode == 5
    why = portal.cli("claim", "why", "cli-long", "-n", "gpu-test1")
    assert "waits for approval: A lease of 5d" in why.stdout
    approved = portal.cli("--context", "alice", "approvals", "approve", "cli-long")
    assert approved.returncode == 0, approved.stderr
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, err
    assert json.loads(out)["state"] in ("applied", "in_use")
    assert "is pending_approval" in err and "is applied" in err

    denied = _waiting(portal, "cli-denied", "6d")
    refused = portal.cli("--context", "alice", "approvals", "deny", "cli-denied")
    assert refused.returncode == 2  # --comment is required: the requester reads it
    decision = portal.cli(
        "--context", "alice", "approvals", "deny", "cli-denied", "--comment", "use the A100s"
    )
    assert decision.returncode == 0, decision.stderr
    out, _ = denied.communicate(timeout=120)
    assert denied.returncode == 11 and json.loads(out)["state"] == "denied"
    portal.cli("claim", "release", "cli-long")


def test_usage_quotas_report_and_audit(portal):
    usage = portal.json("usage")
    assert usage["tenant"] == "team-a"
    assert {c["device_class"] for c in usage["classes"]} >= {"gpu.nvidia.com"}
    assert "gpu.nvidia.com" in portal.cli("usage").stdout
    assert "APPROVE ABOVE" in portal.cli("quotas", "get", "--tenant", "team-a").stdout
    report = portal.cli("report", "allocation-hours", "--period", "last-7-days", "-o", "csv")
    assert report.returncode == 0
    assert report.stdout.splitlines()[0] == "TENANT,NAME,DEVICE HOURS,MEMORY GIB HOURS,ALLOCATIONS"
    events = portal.json("--context", "admin", "audit", "list", "--limit", "5")
    assert len(events) == 5 and all("action" in event for event in events)


def test_configuration_as_code_applies_once_prunes_and_refuses_whole(portal, tmp_path):
    admin = ("--context", "admin")
    exported = portal.cli(*admin, "export")
    assert exported.returncode == 0, exported.stderr
    document = yaml.safe_load(exported.stdout)
    team_a = next(t for t in document["tenants"] if t["slug"] == "team-a")
    assert team_a["quotas"]["gpu.nvidia.com"]["max_device_memory"] is None or isinstance(
        team_a["quotas"]["gpu.nvidia.com"]["max_device_memory"], str
    )
    path = tmp_path / "tenants.yaml"
    path.write_text(exported.stdout)
    assert portal.cli(*admin, "diff", "-f", str(path)).stdout.startswith("No changes")

    team_a["quotas"]["gpu.nvidia.com"]["max_claims"] = 42
    document["tenants"].append(
        {
            "slug": "team-c",
            "name": "Team C",
            "namespaces": ["team-c-ci"],
            "members": {"carol": "member"},
        }
    )
    path.write_text(yaml.safe_dump(document))
    plan = portal.cli(*admin, "plan", "-f", str(path))
    assert "~ quota team-a/gpu.nvidia.com (max_claims" in plan.stdout
    assert "+ tenant team-c" in plan.stdout and "Would apply 4 change(s)." in plan.stdout
    assert portal.cli("apply", "-f", str(path)).returncode == 5  # bob
    applied = portal.cli(*admin, "apply", "-f", str(path))
    assert applied.returncode == 0 and "Applied 4 change(s)." in applied.stdout
    events = len(portal.json(*admin, "audit", "list", "--all"))
    second = portal.cli(*admin, "apply", "-f", str(path))
    assert second.stdout.startswith("No changes")
    assert len(portal.json(*admin, "audit", "list", "--all")) == events  # nothing recorded

    document["tenants"] = [t for t in document["tenants"] if t["slug"] != "team-c"]
    path.write_text(yaml.safe_dump(document))
    assert portal.cli(*admin, "apply", "-f", str(path)).stdout.startswith("No changes")
    pruned = portal.cli(*admin, "apply", "-f", str(path), "--prune")
    assert pruned.returncode == 0 and "- tenant team-c" in pruned.stdout, pruned.stdout
    assert "team-c" not in portal.cli(*admin, "export").stdout

    team_a["colour"] = "blue"
    team_a["members"]["nobody"] = "member"
    team_a["quotas"]["tpu.google.com"] = {"max_devices": 1}
    path.write_text(yaml.safe_dump(document))
    before = portal.cli(*admin, "export").stdout
    refused = portal.cli(*admin, "apply", "-f", str(path))
    assert refused.returncode == 1
    assert "nothing changed" in refused.stderr
    assert "tenants[0].colour: Unknown field." in refused.stderr
    assert "tenants[0].quotas.tpu.google.com: The cluster has no DeviceClass" in refused.stderr
    assert portal.cli(*admin, "export").stdout == before
    broken = tmp_path / "broken.yaml"
    broken.write_text("tenants: [")
    assert portal.cli(*admin, "apply", "-f", str(broken)).returncode == 2


def test_completion_and_help_with_examples(portal):
    script = portal.cli("completion", "bash").stdout
    assert "_DRA_PORTAL_COMPLETE" in script
    for command in (["claim", "submit"], ["apply"], ["devices", "list"], ["approvals", "deny"]):
        assert "Example" in portal.cli(*command, "--help").stdout


def test_the_cli_installs_alone_in_a_clean_virtual_environment(portal, tmp_path):
    """pip install ./cli into a new environment: only its own dependencies, no Django; it then
    signs in and reads from the live portal, and works as a kubectl plugin."""
    environment = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(environment)
    python = environment / "bin" / "python"
    started = time.monotonic()
    installed = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(CLI_PACKAGE),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    assert time.monotonic() - started < 600
    packages = subprocess.run(
        [str(python), "-m", "pip", "list", "--format", "json"], capture_output=True, text=True
    )
    names = {package["name"].lower() for package in json.loads(packages.stdout)}
    assert "dra-portal-cli" in names
    assert not names & {"django", "djangorestframework", "celery", "kubernetes", "dra-portal"}
    run_env = {
        "PATH": f"{environment / 'bin'}:/usr/bin:/bin",
        "DRA_PORTAL_SERVER": portal.stack.url,
        "DRA_PORTAL_TOKEN": portal.tokens["bob"],
        "HOME": str(tmp_path),
    }
    whoami = subprocess.run(
        [str(environment / "bin" / "dra-portal"), "whoami"],
        env=run_env,
        capture_output=True,
        text=True,
    )
    assert whoami.returncode == 0 and "bob on" in whoami.stdout, whoami.stderr
    plugin = subprocess.run(
        [str(environment / "bin" / "kubectl-dra_portal"), "--help"],
        env=run_env,
        capture_output=True,
        text=True,
    )
    assert plugin.stdout.startswith("Usage: kubectl dra-portal")
