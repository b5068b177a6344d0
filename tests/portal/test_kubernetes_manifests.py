"""deploy/ renders, for every overlay, into a least-privilege, locked-down install.

Rendered offline with kubectl's built-in kustomize (no cluster); the API server's own checks
(server-side dry-run, RBAC in action) are in scripts/real_cluster_deploy_check.py, whose output
is docs/deploy-proof.txt.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mirror.backstop import QUOTA_NAME
from portal.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[2]
OVERLAYS = sorted(p.parent.name for p in ROOT.glob("deploy/overlays/*/kustomization.yaml"))
NAMESPACE = "dra-portal"
KUBE_SYSTEM_IDENTITY = ("", "namespaces", "kube-system", "get")

# Every permission of every ClusterRole, as (apiGroup, resource, resourceName or "", verb): the
# calls each component's code makes (docs/deploy.md, "Least privilege"), nothing more.
MINIMAL_RULES: dict[str, set[tuple[str, str, str, str]]] = {
    "dra-portal-watcher": {
        *{
            (group, resource, "", verb)
            for group, resource in [
                ("", "namespaces"),
                ("", "nodes"),
                ("", "pods"),
                ("resource.k8s.io", "deviceclasses"),
                ("resource.k8s.io", "resourceslices"),
                ("resource.k8s.io", "resourceclaims"),
                ("resource.k8s.io", "resourceclaimtemplates"),
            ]
            for verb in ("list", "watch")
        },
        KUBE_SYSTEM_IDENTITY,
    },
    "dra-portal-claims": {
        *{("resource.k8s.io", "resourceclaims", "", v) for v in ("create", "get", "patch")},
        ("resource.k8s.io", "resourceclaims", "", "delete"),
        ("resource.k8s.io", "resourceclaims/status", "", "patch"),
        # Kubernetes 1.36 checks this too when status.allocation changes (docs/deploy.md).
        ("resource.k8s.io", "resourceclaims/binding", "", "patch"),
        ("resource.k8s.io", "resourceclaimtemplates", "", "create"),
        ("resource.k8s.io", "resourceclaimtemplates", "", "get"),
        KUBE_SYSTEM_IDENTITY,
    },
    "dra-portal-lifecycle": {
        *{("resource.k8s.io", "resourceclaims", "", v) for v in ("get", "patch", "delete")},
        ("resource.k8s.io", "resourceclaimtemplates", "", "get"),
        ("resource.k8s.io", "resourceclaimtemplates", "", "delete"),
        KUBE_SYSTEM_IDENTITY,
    },
    "dra-portal-backstop": {
        ("", "resourcequotas", "", "list"),
        ("", "resourcequotas", "", "create"),
        *{("", "resourcequotas", QUOTA_NAME, v) for v in ("get", "update", "delete")},
    },
}
# Which ServiceAccount holds which roles; the others hold none and mount no token.
BINDINGS = {
    "dra-portal-watcher": {"dra-portal-watcher"},
    "dra-portal-claims": {"dra-portal-claims"},
    "dra-portal-worker": {"dra-portal-lifecycle"},
    "dra-portal-backstop": {"dra-portal-backstop"},
    "dra-portal-web": {"dra-portal-backstop"},
}
# What each component runs as, how many, and which Celery queues it consumes.
COMPONENTS = {
    "web": ("dra-portal-web", 2, None),
    "worker": ("dra-portal-worker", 2, {"default", "telemetry"}),
    "allocator": ("dra-portal-claims", 1, {"allocations"}),
    "backstop": ("dra-portal-backstop", 1, {"backstop"}),
    "watchers": ("dra-portal-watcher", 2, None),
    "beat": ("dra-portal-beat", 1, None),
}


@pytest.fixture(scope="module", params=OVERLAYS)
def rendered(request: pytest.FixtureRequest, kubectl_path: str) -> list[dict[str, Any]]:
    result = subprocess.run(
        [kubectl_path, "kustomize", str(ROOT / "deploy" / "overlays" / request.param)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def of_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def deployment(objects: list[dict[str, Any]], component: str) -> dict[str, Any]:
    return of_kind(objects, "Deployment")[f"dra-portal-{component}"]


def pod_templates(objects: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for obj in objects:
        if obj["kind"] in ("Deployment", "DaemonSet", "Job"):
            yield f"{obj['kind']}/{obj['metadata']['name']}", obj["spec"]["template"]["spec"]


def containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod.get("initContainers", []), *pod["containers"]]


def queues_of(container: dict[str, Any]) -> set[str]:
    command = container["command"]
    if "worker" not in command:
        return set()
    return set(command[command.index("-Q") + 1].split(","))


def test_there_is_a_production_overlay_and_the_one_the_real_cluster_check_applies():
    assert {"production", "loopback-check"} <= set(OVERLAYS)


def test_every_pod_is_non_root_with_a_read_only_root_and_no_capabilities(rendered):
    for where, pod in pod_templates(rendered):
        context = pod["securityContext"]
        assert context["runAsNonRoot"] is True, where
        assert context["runAsUser"] != 0 and context["runAsGroup"] != 0, where
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}, where
        for container in containers(pod):
            security = container["securityContext"]
            name = f"{where}/{container['name']}"
            assert security["allowPrivilegeEscalation"] is False, name
            assert security["readOnlyRootFilesystem"] is True, name
            assert security["capabilities"] == {"drop": ["ALL"]}, name
            assert "privileged" not in security and "runAsUser" not in security, name


def test_every_container_has_cpu_and_memory_requests_and_limits(rendered):
    for where, pod in pod_templates(rendered):
        for container in containers(pod):
            resources = container["resources"]
            for bound in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(resources[bound]), (where, container["name"])


def test_the_portal_writes_only_to_its_memory_backed_tmp_and_beat_to_its_var(rendered):
    for where, pod in pod_templates(rendered):
        if where.startswith("DaemonSet/"):
            continue  # the exporter writes nothing
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["tmp"]["emptyDir"]["medium"] == "Memory", where
        for container in containers(pod):
            mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
            assert mounts["tmp"] == str(Path("/") / "tmp"), (where, container["name"])
    beat = deployment(rendered, "beat")["spec"]["template"]["spec"]
    (container,) = beat["containers"]
    assert {"mountPath": "/app/var", "name": "var"} in container["volumeMounts"]
    assert "/app/var/celerybeat-schedule" in container["command"]


def test_servers_have_startup_liveness_and_readiness_probes_and_workers_a_ping(rendered):
    web = deployment(rendered, "web")["spec"]["template"]["spec"]["containers"][0]
    assert web["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert web["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert web["readinessProbe"]["httpGet"]["path"] == "/readyz"
    exporter = of_kind(rendered, "DaemonSet")["dra-portal-exporter"]
    (container,) = exporter["spec"]["template"]["spec"]["containers"]
    assert {"startupProbe", "livenessProbe", "readinessProbe"} <= set(container)
    for component in ("worker", "allocator", "backstop"):
        (container,) = deployment(rendered, component)["spec"]["template"]["spec"]["containers"]
        for probe in ("startupProbe", "livenessProbe"):
            command = " ".join(container[probe]["exec"]["command"])
            assert "inspect ping --destination celery@$HOSTNAME" in command, component
    # The watchers are not a Celery worker: alive while the file their command touches is new.
    (container,) = deployment(rendered, "watchers")["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    alive = command[command.index("--alive-file") + 1]
    assert command[:3] == ["python", "manage.py", "watch"]
    for probe in ("startupProbe", "livenessProbe"):
        assert alive in " ".join(container[probe]["exec"]["command"])


def test_the_workers_and_watchers_serve_their_metrics_on_the_port_the_pod_monitor_scrapes(
    rendered,
):
    for component in ("worker", "allocator", "backstop", "watchers"):
        (container,) = deployment(rendered, component)["spec"]["template"]["spec"]["containers"]
        env = {item["name"]: item["value"] for item in container.get("env", [])}
        ports = {port["name"]: port["containerPort"] for port in container["ports"]}
        assert ports["metrics"] == int(env["METRICS_PORT"]), component
        if component != "watchers":  # prefork pools: their processes' samples added up
            assert env["PROMETHEUS_MULTIPROC_DIR"].startswith("/tmp/"), component  # noqa: S108


def test_the_web_and_watchers_run_twice_without_both_going_and_beat_and_allocator_once(rendered):
    budgets = of_kind(rendered, "PodDisruptionBudget")
    for component, (account, replicas, _) in COMPONENTS.items():
        spec = deployment(rendered, component)["spec"]
        assert spec["replicas"] == replicas, component
        assert spec["template"]["spec"]["serviceAccountName"] == account, component
        if replicas > 1:
            budget = budgets[f"dra-portal-{component}"]["spec"]
            assert budget["minAvailable"] == 1
            assert budget["selector"] == spec["selector"]
    for component in ("beat", "allocator"):  # a rollout never runs two at once
        assert deployment(rendered, component)["spec"]["strategy"] == {"type": "Recreate"}
    allocator = deployment(rendered, "allocator")["spec"]["template"]["spec"]["containers"][0]
    command = allocator["command"]
    assert command[command.index("--concurrency") + 1] == "1"


def test_every_celery_queue_is_consumed_by_the_component_that_holds_its_rights(rendered):
    consumed: dict[str, str] = {}
    for component, (_, _, expected) in COMPONENTS.items():
        (container,) = deployment(rendered, component)["spec"]["template"]["spec"]["containers"]
        assert queues_of(container) == (expected or set()), component
        for queue in expected or ():
            assert queue not in consumed, f"{queue}: {consumed.get(queue)} and {component}"
            consumed[queue] = component
    assert set(consumed) == {queue.name for queue in celery_app.conf.task_queues}
    routes = celery_app.conf.task_routes
    assert consumed[routes["mirror.sync_backstop"]["queue"]] == "backstop"
    assert consumed[routes["mirror.check_backstops"]["queue"]] == "backstop"
    assert consumed[routes["claims.apply_request"]["queue"]] == "allocator"


def test_the_roles_are_exactly_the_minimal_set(rendered):
    roles = of_kind(rendered, "ClusterRole")
    assert not of_kind(rendered, "Role")
    granted = {}
    for name, role in roles.items():
        granted[name] = {
            (group, resource, resource_name, verb)
            for rule in role["rules"]
            for group in rule["apiGroups"]
            for resource in rule["resources"]
            for resource_name in rule.get("resourceNames") or [""]
            for verb in rule["verbs"]
        }
    assert granted == MINIMAL_RULES


def test_each_service_account_holds_only_its_roles_and_the_others_no_token(rendered):
    held: dict[str, set[str]] = {}
    bindings = [*of_kind(rendered, "ClusterRoleBinding").values()]
    assert not of_kind(rendered, "RoleBinding")
    for binding in bindings:
        assert binding["roleRef"]["kind"] == "ClusterRole"
        for subject in binding["subjects"]:
            assert (subject["kind"], subject["namespace"]) == ("ServiceAccount", NAMESPACE)
            held.setdefault(subject["name"], set()).add(binding["roleRef"]["name"])
    assert held == BINDINGS
    for name, account in of_kind(rendered, "ServiceAccount").items():
        if name not in BINDINGS:
            assert account["automountServiceAccountToken"] is False, name
    for where, pod in pod_templates(rendered):
        if pod.get("serviceAccountName") not in BINDINGS:
            assert pod["automountServiceAccountToken"] is False, where


def test_the_backstop_accounts_may_write_only_the_portals_own_quota(rendered):
    (policy,) = of_kind(rendered, "ValidatingAdmissionPolicy").values()
    (binding,) = of_kind(rendered, "ValidatingAdmissionPolicyBinding").values()
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert binding["spec"]["validationActions"] == ["Deny"]
    spec = policy["spec"]
    assert spec["failurePolicy"] == "Fail"
    (rule,) = spec["matchConstraints"]["resourceRules"]
    assert set(rule["operations"]) == {"CREATE", "UPDATE", "DELETE"}
    assert rule["resources"] == ["resourcequotas"]
    (condition,) = spec["matchConditions"]
    for account, roles in BINDINGS.items():
        assert (f"':{account}'" in condition["expression"]) == ("dra-portal-backstop" in roles)
    checks = " ".join(v["expression"] for v in spec["variables"])
    assert f"== '{QUOTA_NAME}'" in checks
    assert "'app.kubernetes.io/managed-by'] == 'dra-portal'" in checks


def test_no_secret_is_in_the_repository_only_referenced(rendered):
    assert not of_kind(rendered, "Secret")
    for path in (ROOT / "deploy").rglob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            assert not (doc and doc.get("kind") == "Secret"), path
    (config,) = of_kind(rendered, "ConfigMap").values()
    data = config["data"]
    assert data["DEBUG"] == "false"
    for key in ("SECRET_KEY", "DATABASE_URL", "REDIS_URL"):
        assert key not in data
        assert data[f"{key}_FILE"] == f"/etc/dra-portal/secrets/{key}"
    for where, pod in pod_templates(rendered):
        if where.startswith("DaemonSet/"):
            continue
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["secrets"]["secret"]["secretName"] == "dra-portal", where
        for container in containers(pod):
            mount = {"name": "secrets", "mountPath": "/etc/dra-portal/secrets", "readOnly": True}
            assert mount in container["volumeMounts"], (where, container["name"])
            assert container["envFrom"] == [{"configMapRef": {"name": config["metadata"]["name"]}}]


def test_new_pods_wait_for_migrations_which_a_job_runs(rendered):
    job = of_kind(rendered, "Job")["dra-portal-migrate"]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["python", "manage.py", "migrate", "--no-input"]
    for component in COMPONENTS:
        (init,) = deployment(rendered, component)["spec"]["template"]["spec"]["initContainers"]
        assert "manage.py migrate --check" in " ".join(init["command"]), component


def test_network_policies_deny_by_default_and_let_each_component_reach_what_it_needs(rendered):
    policies = of_kind(rendered, "NetworkPolicy")
    namespaces = {o["metadata"]["namespace"] for _, o in _namespaced_pods(rendered)}
    for namespace in namespaces:
        assert any(
            p["metadata"]["namespace"] == namespace
            and p["spec"]["podSelector"] == {}
            and "Ingress" in p["spec"]["policyTypes"]
            and "Egress" in p["spec"]["policyTypes"]
            for p in policies.values()
        ), f"no default deny in {namespace}"
    assert policies["dra-portal-dns"]["spec"]["podSelector"] == {}
    datastores = policies["dra-portal-datastores"]["spec"]
    assert datastores["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "dra-portal"}}
    assert {p["port"] for p in datastores["egress"][0]["ports"]} == {5432, 6379}
    api = policies["dra-portal-kube-apiserver"]["spec"]["podSelector"]["matchExpressions"][0]
    with_rights = {c for c, (account, *_) in COMPONENTS.items() if account in BINDINGS}
    assert set(api["values"]) == with_rights
    web = policies["dra-portal-web-ingress"]["spec"]
    assert web["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 8000}]


def _namespaced_pods(objects: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for obj in objects:
        if obj["kind"] in ("Deployment", "DaemonSet", "Job"):
            yield obj["metadata"]["name"], obj


def test_the_portals_namespace_enforces_the_restricted_pod_security_standard(rendered):
    namespaces = of_kind(rendered, "Namespace")
    labels = namespaces[NAMESPACE]["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    for _, obj in _namespaced_pods(rendered):
        pod = obj["spec"]["template"]["spec"]
        assert not pod.get("hostPID") or obj["metadata"]["namespace"] != NAMESPACE
        assert not pod.get("hostNetwork")


def test_the_production_overlay_pins_a_release_and_names_its_host():
    path = ROOT / "deploy" / "overlays" / "production" / "kustomization.yaml"
    overlay = yaml.safe_load(path.read_text())
    (image,) = overlay["images"]
    assert image["newTag"] not in ("", "latest")
    literals = dict(item.split("=", 1) for item in overlay["configMapGenerator"][0]["literals"])
    # The probes send Host: localhost.
    assert "localhost" in literals["ALLOWED_HOSTS"].split(",")
