"""deploy/monitoring: the alerts and the dashboard refer only to metrics ``/metrics`` exposes,
so neither can drift from the code; and the folder renders with kustomize."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.unavailable import unavailable

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "monitoring"
SUFFIXES = {
    "counter": ("_total",),
    "histogram": ("_bucket", "_sum", "_count"),
    "gauge": ("",),
}
# What may appear in an expression besides metric names, functions and labels.
KEYWORDS = {"and", "or", "unless", "by", "without", "bool", "on", "ignoring", "offset"}


def alert_expressions() -> dict[str, str]:
    rule = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())
    return {r["alert"]: r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]}


def dashboard_expressions() -> dict[str, str]:
    dashboard = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    return {
        f"{panel['title']} [{target['refId']}]": target["expr"]
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
    }


def metric_names(expression: str) -> set[str]:
    """The metric names an expression selects: identifiers that are not functions (followed
    by "("), labels (in {…} or by/without (…)), keywords, durations or numbers."""
    text = re.sub(r'"[^"]*"', "", expression)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        following = text[match.end() :].lstrip()
        if following.startswith("(") or match.group() in KEYWORDS:
            continue
        names.add(match.group())
    return names


@pytest.fixture
def exposed(client, db) -> set[str]:
    response = client.get("/metrics")
    assert response.status_code == 200
    names = set()
    for family in text_string_to_metric_families(response.content.decode()):
        names.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ("",)))
    return names


def test_every_alert_uses_only_exposed_metrics(exposed):
    alerts = alert_expressions()
    for alert in ("DRAPortalMirrorStale", "DRAPortalClaimApplyFailures", "DRAPortalQueueBacklog"):
        assert alert in alerts
    for alert, expression in alerts.items():
        names = metric_names(expression)
        assert names, alert
        assert names <= exposed, (alert, names - exposed)


def test_every_dashboard_panel_uses_only_exposed_metrics(exposed):
    expressions = dashboard_expressions()
    assert len(expressions) >= 15
    used = set()
    for panel, expression in expressions.items():
        names = metric_names(expression)
        assert names, panel
        assert names <= exposed, (panel, names - exposed)
        used |= names
    # The dashboard shows every metric family the portal defines.
    portal = {name for name in exposed if name.startswith("dra_portal_")}
    families = {re.sub(r"_(bucket|sum|count|total)$", "", name) for name in portal}
    shown = {re.sub(r"_(bucket|sum|count|total)$", "", name) for name in used}
    assert families <= shown, families - shown


def test_the_expression_parser_sees_what_an_expression_selects():
    assert metric_names(
        'histogram_quantile(0.95, sum by (le, view) (rate(a_bucket{status="5xx"}[5m]))) > 2'
    ) == {"a_bucket"}
    assert metric_names("absent(b) and max by (kind) (c) == 1 or up") == {"b", "c", "up"}


def test_it_renders_with_kustomize():
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        unavailable("kubectl is not installed")
    rendered = subprocess.run(
        [kubectl, "kustomize", str(MONITORING)], capture_output=True, text=True, timeout=60
    )
    assert rendered.returncode == 0, rendered.stderr
    objects = list(yaml.safe_load_all(rendered.stdout))
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert kinds == {
        ("ConfigMap", "dra-portal-dashboard"),
        ("PodMonitor", "dra-portal"),
        ("PrometheusRule", "dra-portal"),
    }
    [configmap] = [o for o in objects if o["kind"] == "ConfigMap"]
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(configmap["data"]["dra-portal.json"])["uid"] == "dra-portal"
