"""The Celery workers' metrics endpoint (``METRICS_PORT``), under the web's access rule, and
multi-process mode: samples of every process under ``PROMETHEUS_MULTIPROC_DIR`` added up."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from portal.metrics import start_metrics_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server_url():
    server = start_metrics_server(0, "127.0.0.1")
    yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    server.shutdown()
    server.server_close()


def get(url: str, **headers: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_worker_serves_its_measured_metrics(server_url):
    status, body = get(server_url)
    assert status == 200
    assert "# TYPE dra_portal_mirror_batch_duration_seconds histogram" in body
    assert "# TYPE dra_portal_claim_apply_duration_seconds histogram" in body
    # The scrape-time metrics (database, Redis) are the web's, not repeated per worker.
    assert "dra_portal_claim_requests" not in body


def test_the_workers_endpoint_has_the_webs_access_rule(server_url, settings):
    settings.METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    settings.METRICS_TOKEN = "worker-scrape-token"
    assert get(server_url)[0] == 403
    assert get(server_url, Authorization="Bearer nope")[0] == 403
    assert get(server_url, Authorization="Bearer worker-scrape-token")[0] == 200


OBSERVE = """
import django, os
django.setup()
from portal.metrics import REQUEST_SECONDS
for _ in range({n}):
    REQUEST_SECONDS.labels("dashboard", "GET", "2xx").observe(0.02)
"""
EXPOSE = """
import django
django.setup()
from portal.metrics import exposition
print(exposition(scrape_time=False).decode())
"""
PREPARE = """
from portal.metrics import prepare_multiprocess_dir
prepare_multiprocess_dir()
"""


def run_python(code: str, folder: Path) -> str:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder)}
    env.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def count_of(text: str) -> float:
    prefix = (
        'dra_portal_http_request_duration_seconds_count{method="GET",status="2xx",view="dashboard"}'
    )
    [line] = [line for line in text.splitlines() if line.startswith(prefix)]
    return float(line.split()[-1])


def test_samples_of_several_processes_are_added_up_and_cleared_at_start(tmp_path):
    folder = tmp_path / "metrics"
    run_python(PREPARE, folder)
    run_python(OBSERVE.format(n=3), folder)
    run_python(OBSERVE.format(n=4), folder)
    assert count_of(run_python(EXPOSE, folder)) == 7
    run_python(PREPARE, folder)  # a restarted server starts from nothing
    assert "dra_portal_http_request_duration_seconds_count{" not in run_python(EXPOSE, folder)
