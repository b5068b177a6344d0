"""Prove deploy/ on a real control plane, with the ServiceAccounts it creates (a manual check,
not a test; its last output is docs/deploy-proof.txt).

Needs a kube-apiserver with RBAC (kube-controller-manager for token signing and garbage
collection; no kubelet: pods never run, so the portal's processes run here, each with the
token of the ServiceAccount its Deployment names), a cluster-admin kubeconfig, kubectl, and a
SCRATCH PostgreSQL database and Redis database (both are emptied):

    ADMIN_KUBECONFIG=/path/to/admin-kubeconfig \\
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/scratch REDIS_URL=redis://127.0.0.1:6379/9 \\
        .venv/bin/python scripts/real_cluster_deploy_check.py [--kubectl PATH] [--overlay NAME]

What it does, and fails on (exit 1) when anything is not as designed:

1. renders every overlay and server-side dry-runs every object of each (after creating the
   namespaces): each must be accepted, with no warning (the namespace's restricted Pod Security
   Standard warns on any pod template that breaks it);
2. applies ``--overlay`` (default loopback-check) for real, loads devices/fixtures as the admin
   (the cluster's own DRA objects), creates a tenant namespace;
3. mints a token for each ServiceAccount (``kubectl create token``), writes a kubeconfig with
   it, and starts the portal's Celery processes as the Deployments do (watchers, allocator,
   worker, backstop, beat), each with its own account's kubeconfig and nothing else;
4. checks, through the portal's own code: the mirror exact (every kind's uids and
   resourceVersions equal the cluster's), the tenant's ResourceQuota written by the backstop
   worker, the web's "Check now"/"Repair" with the web's token, a reservation applied by the
   allocator (claim created, status.allocation written), a template request applied, both
   released by the worker (deleted), the mirror exact again;
5. checks the refusals least privilege promises (each must be refused), then that nothing was
   refused in any process's log and no mirror kind counted an error;
6. prints ``kubectl auth can-i --list`` of every ServiceAccount, with the token, as a table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "dra-portal"
TENANT_NS = "deploy-check"
FOREIGN_NS = "deploy-check-foreign"
ACCOUNTS = [
    "dra-portal-web",
    "dra-portal-watcher",
    "dra-portal-claims",
    "dra-portal-worker",
    "dra-portal-backstop",
    "dra-portal-beat",
    "dra-portal-migrate",
]
# The processes the Deployments run: name, account, Celery arguments (deploy/base/workers.yaml).
PROCESSES = [
    ("watchers", "dra-portal-watcher", ["watch"]),
    ("allocator", "dra-portal-claims", ["worker", "-Q", "allocations", "--concurrency", "1"]),
    ("worker", "dra-portal-worker", ["worker", "-Q", "default,telemetry", "--concurrency", "2"]),
    ("backstop", "dra-portal-backstop", ["worker", "-Q", "backstop", "--concurrency", "1"]),
    ("beat", "dra-portal-beat", ["beat"]),
]
REFUSED = re.compile(r"forbidden|unauthori[sz]ed", re.IGNORECASE)  # how 403 and 401 read
START = time.monotonic()
problems: list[str] = []


def say(*parts: object) -> None:
    print(f"[{time.monotonic() - START:6.1f}s]", *parts, flush=True)


def check(ok: bool, what: str) -> bool:
    say("ok  " if ok else "FAIL", what)
    if not ok:
        problems.append(what)
    return ok


def run(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(  # noqa: S603 (kubectl and our own interpreter, our arguments)
        list(args), input=stdin, capture_output=True, text=True, env=env, check=False
    )


def wait_for(what: str, probe: Any, seconds: float = 120) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = probe()
        if value:
            say(f"     {what}")
            return value
        if time.monotonic() > deadline:
            check(False, f"timed out after {seconds:.0f}s waiting for: {what}")
            return value
        time.sleep(0.5)


class Kubectl:
    def __init__(self, binary: str, kubeconfig: str) -> None:
        self.binary, self.kubeconfig = binary, kubeconfig

    def __call__(self, *args: str, stdin: str | None = None) -> Any:
        return run(self.binary, "--kubeconfig", self.kubeconfig, *args, stdin=stdin)


def render(kubectl: str, overlay: str) -> list[dict[str, Any]]:
    result = run(kubectl, "kustomize", str(ROOT / "deploy" / "overlays" / overlay))
    if result.returncode:
        raise SystemExit(result.stderr)
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def as_yaml(objects: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(objects, sort_keys=False)


def dry_run_and_apply(admin: Kubectl, kubectl: str, overlay: str) -> None:
    overlays = sorted(p.parent.name for p in ROOT.glob("deploy/overlays/*/kustomization.yaml"))
    rendered = {name: render(kubectl, name) for name in overlays}
    namespaces = [o for o in rendered[overlay] if o["kind"] == "Namespace"]
    result = admin("apply", "--server-side", "--field-manager=dra-portal-install", "-f", "-",
                   stdin=as_yaml(namespaces))  # fmt: skip
    check(result.returncode == 0, f"namespaces created: {result.stdout.split()}")
    for name, objects in rendered.items():
        result = admin(
            "apply", "--server-side", "--dry-run=server", "--field-manager=dra-portal-install",
            "-o", "name", "-f", "-", stdin=as_yaml(objects),
        )  # fmt: skip
        accepted = [line for line in result.stdout.splitlines() if line.strip()]
        say(f"     overlay {name}: server-side dry-run of {len(objects)} objects")
        for line in accepted:
            say(f"       accepted {line}")
        check(
            result.returncode == 0 and len(accepted) == len(objects),
            f"overlay {name}: {len(accepted)}/{len(objects)} objects accepted by server-side "
            "dry-run" + (f": {result.stderr.strip()}" if result.returncode else ""),
        )
        check(not result.stderr.strip(), f"overlay {name}: no warning ({result.stderr.strip()!r})")
    result = admin("apply", "--server-side", "--field-manager=dra-portal-install", "-f", "-",
                   stdin=as_yaml(rendered[overlay]))  # fmt: skip
    check(
        result.returncode == 0 and not result.stderr.strip(),
        f"overlay {overlay} applied for real: {len(result.stdout.splitlines())} objects"
        + (f" ({result.stderr.strip()})" if result.stderr.strip() else ""),
    )
    policy = json.loads(
        admin(
            "get", "validatingadmissionpolicy", "dra-portal-backstop-owns-its-quotas", "-o", "json"
        ).stdout  # fmt: skip
    )
    warnings = (policy.get("status") or {}).get("typeChecking", {}).get("expressionWarnings")
    check(not warnings, f"the admission policy's CEL type-checks cleanly ({warnings or 'none'})")


def account_kubeconfigs(admin: Kubectl, folder: Path) -> dict[str, str]:
    config = yaml.safe_load(Path(admin.kubeconfig).read_text())
    cluster = config["clusters"][0]["cluster"]
    paths = {}
    for account in ACCOUNTS:
        token = admin("create", "token", account, "-n", NAMESPACE, "--duration=2h").stdout.strip()
        check(bool(token), f"token minted for {account}")
        path = folder / f"{account}.kubeconfig"
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "check", "cluster": cluster}],
                    "users": [{"name": account, "user": {"token": token}}],
                    "contexts": [
                        {"name": account, "context": {"cluster": "check", "user": account}}
                    ],
                    "current-context": account,
                }
            )
        )
        path.chmod(0o600)
        paths[account] = str(path)
    return paths


def start_processes(kubeconfigs: dict[str, str], logs: Path) -> list[tuple[str, Any, Path]]:
    started = []
    for name, account, arguments in PROCESSES:
        env = {**os.environ, "KUBECONFIG": kubeconfigs[account], "WATCH_RUN_SECONDS": "60"}
        env.pop("ADMIN_KUBECONFIG", None)
        env.pop("KUBE_API_SERVER", None)
        log = logs / f"{name}.log"
        if arguments[0] == "watch":  # the watchers are a command of their own, not Celery
            command = [sys.executable, "manage.py", *arguments]
        else:
            extra = ["-n", f"{name}@%h"] if arguments[0] == "worker" else []
            if arguments[0] == "beat":
                extra = ["--schedule", str(logs / "celerybeat-schedule")]
            command = [sys.executable, "-m", "celery", "-A", "portal", *arguments, *extra]
            command += ["-l", "INFO"]
        process = subprocess.Popen(  # noqa: S603 (our own interpreter and arguments)
            command,
            cwd=ROOT,
            env=env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        say(f"     started {name} as {account} (pid {process.pid}), log {log.name}")
        started.append((name, process, log))
    return started


def stop_processes(started: list[tuple[str, Any, Path]]) -> None:
    for _, process, _ in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
    for name, process, _ in started:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            say(f"     {name} killed after 30 s")


def mirror_differences(cluster: Any) -> dict[str, str]:
    from mirror.mapping import MIRRORED_KINDS
    from mirror.store import stored_versions

    different = {}
    for kind in MIRRORED_KINDS:
        items, _ = cluster.list_all(kind)
        live = {i["metadata"]["uid"]: i["metadata"]["resourceVersion"] for i in items}
        stored = stored_versions(kind)
        if live != stored:
            different[kind.value] = f"cluster {len(live)}, mirror {len(stored)}"
    return different


def mirror_exact(cluster: Any, when: str) -> None:
    from mirror.mapping import MIRRORED_KINDS
    from mirror.store import stored_versions

    wait_for(f"mirror exact ({when})", lambda: not mirror_differences(cluster), 150)
    counts = ", ".join(f"{k.value} {len(stored_versions(k))}" for k in MIRRORED_KINDS)
    check(not mirror_differences(cluster), f"mirror exact {when}: {counts}")


def the_portal_at_work(cluster: Any, kubeconfigs: dict[str, str]) -> None:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import AnonymousUser
    from django.test import override_settings

    from claims.models import ClaimRequest
    from claims.requests.services import release_request, save_class_policy, submit_request
    from claims.requests.specs import ClaimInput
    from kube.errors import NotFound
    from kube.kinds import Kind
    from mirror.backstop import QUOTA_NAME, check_backstop, desired_hard, repair_backstop
    from mirror.models import BackstopStatus, MirrorStatus
    from portal.services import tenants

    mirror_exact(cluster, "after the first list")

    tenant = tenants.save_tenant(
        actor=None,
        tenant=None,
        namespaces=[TENANT_NS],
        name="Deploy check",
        slug="deploy-check",
        resource_quota_backstop=True,
    )
    for device_class in ("gpu.nvidia.com", "gpu.example.com"):
        tenants.save_quota(
            actor=None, tenant=tenant, device_class_name=device_class, max_devices=4, max_claims=4
        )
    want = desired_hard(tenant)

    def quota() -> dict[str, Any] | None:
        try:
            found = cluster.get(Kind.RESOURCE_QUOTAS, QUOTA_NAME, TENANT_NS)
        except NotFound:
            return None
        return found if found["spec"].get("hard") == want else None

    written = wait_for("the backstop worker wrote the ResourceQuota", quota, 60)
    check(bool(written), f"ResourceQuota {TENANT_NS}/{QUOTA_NAME} hard = {want}")
    with override_settings(KUBECONFIG=kubeconfigs["dra-portal-web"]):
        checked = check_backstop(tenant)
        repaired = repair_backstop(actor=None, tenant=tenant)
    states = {r.state for r in [*checked, *repaired]}
    check(states == {BackstopStatus.State.IN_SYNC}, f"web's Check now and Repair: {states}")

    user, _ = get_user_model().objects.get_or_create(username="deploy-check")
    tenants.set_member(actor=None, tenant=tenant, user=user, role="member")
    admin = AnonymousUser()
    save_class_policy(actor=admin, device_class_name="gpu.nvidia.com", mode="reservation")
    save_class_policy(actor=admin, device_class_name="gpu.example.com", mode="scheduler")
    reserved = submit_request(
        user=user,
        claim=ClaimInput(
            namespace=TENANT_NS, name="reserved-gpu", device_class_name="gpu.nvidia.com"
        ),
    )
    template = submit_request(
        user=user,
        claim=ClaimInput(
            namespace=TENANT_NS,
            name="per-pod-gpu",
            device_class_name="gpu.example.com",
            sharing="template",
        ),
    )

    def state_of(request: ClaimRequest, *states: str) -> bool:
        request.refresh_from_db()
        return request.state in states

    applied = ClaimRequest.State.APPLIED
    decided = (applied, ClaimRequest.State.FAILED)
    for request in (reserved, template):
        wait_for(
            f"{request.name} decided by the allocator", lambda r=request: state_of(r, *decided)
        )
        check(request.state == applied, f"{request.name}: {request.state} {request.reason}")
    claim = cluster.get(Kind.RESOURCE_CLAIMS, "reserved-gpu", TENANT_NS)
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results")
    check(
        bool(results) and claim["metadata"].get("finalizers"),
        f"claim {TENANT_NS}/reserved-gpu reserved: {[r['device'] for r in results or []]}, "
        f"finalizers {claim['metadata'].get('finalizers')}",
    )
    made = cluster.get(Kind.RESOURCE_CLAIM_TEMPLATES, "per-pod-gpu", TENANT_NS)
    check(bool(made["metadata"].get("uid")), f"template {TENANT_NS}/per-pod-gpu created")
    mirror_exact(cluster, "with the portal's claims")

    ended = (ClaimRequest.State.RELEASED, ClaimRequest.State.EXPIRED)
    for request in (r for r in (reserved, template) if r.state == applied):
        release_request(user=user, request=request)
        wait_for(f"{request.name} released by the worker", lambda r=request: state_of(r, *ended))
        check(request.state in ended, f"{request.name}: {request.state}")
    for kind, name in (
        (Kind.RESOURCE_CLAIMS, "reserved-gpu"),
        (Kind.RESOURCE_CLAIM_TEMPLATES, "per-pod-gpu"),
    ):
        try:
            cluster.get(kind, name, TENANT_NS)
            check(False, f"{kind.value} {name} deleted")
        except NotFound:
            check(True, f"{kind.value} {TENANT_NS}/{name} deleted")
    mirror_exact(cluster, "after the releases")
    errors = {s.kind: s.error_count for s in MirrorStatus.objects.all() if s.error_count}
    check(not errors, f"no mirror kind counted an error ({errors or 'none'})")
    refused = [
        f"{r.name}: {r.reason}" for r in ClaimRequest.objects.filter(reason__icontains="forbid")
    ]
    refused += [f"{s.namespace}: {s.error}" for s in BackstopStatus.objects.exclude(error="")]
    check(not refused, f"no request or backstop status refused ({refused or 'none'})")


FOREIGN_QUOTA = {
    "apiVersion": "v1",
    "kind": "ResourceQuota",
    "metadata": {"name": "dra-portal-quota", "namespace": FOREIGN_NS},
    "spec": {"hard": {"count/resourceclaims.resource.k8s.io": "1"}},
}


def refusals(admin: Kubectl, kubectl: str, kubeconfigs: dict[str, str]) -> None:
    """What least privilege must refuse: each must fail with Forbidden."""
    admin("create", "namespace", FOREIGN_NS)
    admin("create", "-f", "-", stdin=json.dumps(FOREIGN_QUOTA))  # someone else's, same name
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "not-allowed", "namespace": TENANT_NS},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]
            }
        },
    }
    other_quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {
            "name": "not-the-portals",
            "namespace": TENANT_NS,
            "labels": {"app.kubernetes.io/managed-by": "dra-portal"},
        },
        "spec": {"hard": {"pods": "1"}},
    }
    cases = [
        ("dra-portal-backstop", "creates a ResourceQuota of another name",
         ["create", "-f", "-"], json.dumps(other_quota)),
        ("dra-portal-backstop", "replaces someone else's dra-portal-quota",
         ["replace", "-f", "-"], json.dumps({**FOREIGN_QUOTA, "spec": {"hard": {"pods": "9"}}})),
        ("dra-portal-backstop", "deletes someone else's dra-portal-quota",
         ["delete", "resourcequota", "dra-portal-quota", "-n", FOREIGN_NS], None),
        ("dra-portal-web", "deletes someone else's dra-portal-quota",
         ["delete", "resourcequota", "dra-portal-quota", "-n", FOREIGN_NS], None),
        ("dra-portal-backstop", "reads a Secret",
         ["get", "secrets", "-n", NAMESPACE], None),
        ("dra-portal-backstop", "creates a ResourceClaim",
         ["create", "-f", "-"], json.dumps(claim)),
        ("dra-portal-watcher", "creates a ResourceClaim",
         ["create", "-f", "-"], json.dumps(claim)),
        ("dra-portal-watcher", "reads a Secret",
         ["get", "secrets", "-A"], None),
        ("dra-portal-claims", "lists ResourceClaims",
         ["get", "resourceclaims", "-A"], None),
        ("dra-portal-claims", "creates a ResourceQuota",
         ["create", "-f", "-"], json.dumps(other_quota)),
        ("dra-portal-claims", "creates a Pod",
         ["run", "nope", "--image=none", "-n", TENANT_NS], None),
        ("dra-portal-worker", "creates a ResourceClaim",
         ["create", "-f", "-"], json.dumps(claim)),
        ("dra-portal-worker", "writes a claim's status",
         ["patch", "resourceclaim", "x", "-n", TENANT_NS, "--subresource=status",
          "--type=merge", "-p", '{"status":{}}'], None),
        ("dra-portal-web", "creates a ResourceClaim",
         ["create", "-f", "-"], json.dumps(claim)),
        ("dra-portal-beat", "lists Nodes",
         ["get", "nodes"], None),
        ("dra-portal-migrate", "reads the kube-system Namespace",
         ["get", "namespace", "kube-system"], None),
    ]  # fmt: skip
    for account, what, args, stdin in cases:
        result = Kubectl(kubectl, kubeconfigs[account])(*args, stdin=stdin)
        message = (result.stderr.strip().splitlines() or [""])[-1]
        refused = result.returncode != 0 and "forbidden" in message.lower()
        check(refused, f"refused: {account} {what}: {message[:160]}")
    left = json.loads(
        admin("get", "resourcequota", "dra-portal-quota", "-n", FOREIGN_NS, "-o", "json").stdout
    )
    check(left["spec"]["hard"] == FOREIGN_QUOTA["spec"]["hard"], "someone else's quota untouched")


def logs_clean(started: list[tuple[str, Any, Path]]) -> None:
    for name, process, log in started:
        text = log.read_text(errors="replace")
        refused = [line for line in text.splitlines() if REFUSED.search(line)]
        tracebacks = text.count("Traceback")
        check(
            not refused and not tracebacks and process.poll() is None,
            f"{name}: {len(text.splitlines())} log lines, {len(refused)} refused, "
            f"{tracebacks} tracebacks, running: {process.poll() is None}",
        )
        for line in refused[:5]:
            say("       ", line[:200])


def can_i_table(kubectl: str, kubeconfigs: dict[str, str]) -> None:
    """What each account may do, asked with its own token. Rows every authenticated user has
    (self reviews, discovery and health URLs) are left out."""
    generic = {
        "selfsubjectreviews.authentication.k8s.io",
        "selfsubjectaccessreviews.authorization.k8s.io",
        "selfsubjectrulesreviews.authorization.k8s.io",
    }
    print("\n| ServiceAccount | resource | resource names | verbs |")
    print("| --- | --- | --- | --- |")
    for account in ACCOUNTS:
        result = Kubectl(kubectl, kubeconfigs[account])("auth", "can-i", "--list")
        rows = []
        for line in result.stdout.splitlines()[1:]:
            parts = re.split(r"\s{2,}", line.strip())
            if len(parts) < 4 or parts[0] in generic or not parts[0]:
                continue
            resource, _urls, names, verbs = parts[:4]
            rows.append((resource, names.strip("[]") or "all", verbs.strip("[]")))
        if not rows:
            rows = [("(nothing)", "", "")]
        for resource, names, verbs in rows:
            print(f"| `{account}` | {resource} | {names} | {verbs} |")
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--kubectl", default=os.environ.get("KUBECTL", "kubectl"))
    parser.add_argument("--overlay", default="loopback-check")
    options = parser.parse_args()
    admin_kubeconfig = os.environ.get("ADMIN_KUBECONFIG")
    if not (admin_kubeconfig and os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")):
        parser.error("set ADMIN_KUBECONFIG, DATABASE_URL and REDIS_URL (scratch: they are emptied)")
    # The portal's code in this process never talks to the cluster as the admin: where it
    # must talk to it, it does with an account's kubeconfig.
    os.environ["KUBECONFIG"] = "/nonexistent/the-driver-has-no-cluster-credentials"
    os.environ.pop("KUBE_API_SERVER", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)
    admin = Kubectl(options.kubectl, admin_kubeconfig)
    say("kubectl", run(options.kubectl, "version", "--kubeconfig", admin_kubeconfig).stdout.split())

    for step in (["migrate", "--no-input", "-v0"], ["flush", "--no-input", "-v0"]):
        result = run(sys.executable, "manage.py", *step)
        check(result.returncode == 0, f"manage.py {' '.join(step)} {result.stderr[-300:]}")
    import django
    import redis

    django.setup()
    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()

    from kube.client import Cluster
    from kube.config import ClusterConfig

    dry_run_and_apply(admin, options.kubectl, options.overlay)
    result = run(sys.executable, "manage.py", "load_fixtures", "--kubeconfig", admin_kubeconfig)
    check(result.returncode == 0, f"fixtures loaded as the admin: {result.stdout.strip()}")
    admin("create", "namespace", TENANT_NS)

    with tempfile.TemporaryDirectory(prefix="deploy-check-") as scratch:
        kubeconfigs = account_kubeconfigs(admin, Path(scratch))
        started = start_processes(kubeconfigs, Path(scratch))
        try:
            with Cluster(ClusterConfig(kubeconfig=admin_kubeconfig)) as cluster:
                the_portal_at_work(cluster, kubeconfigs)
            refusals(admin, options.kubectl, kubeconfigs)
            logs_clean(started)
        finally:
            stop_processes(started)
        can_i_table(options.kubectl, kubeconfigs)
    say(f"{len(problems)} problem(s)" + "".join(f"\n  - {p}" for p in problems))
    print("DEPLOY CHECK OK" if not problems else "DEPLOY CHECK FAILED")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
