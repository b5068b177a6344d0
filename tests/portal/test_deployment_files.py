"""docker-compose.yml and the Dockerfile describe the production stack.

`docker compose config` cannot run on machines without the compose plugin (ours), so the
structure it would check is pinned here.
"""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_the_stack_has_every_service_with_health_checks_where_they_matter():
    services = compose()["services"]
    assert {"postgres", "redis", "migrate", "web", "worker", "beat"} <= set(services)
    for name in ("postgres", "redis", "web", "worker"):
        assert "test" in services[name]["healthcheck"], name
    assert services["web"]["depends_on"]["migrate"]["condition"] == (
        "service_completed_successfully"
    )


def test_the_app_services_run_in_production_mode_with_their_secrets_from_the_environment():
    services = compose()["services"]
    for name in ("web", "worker", "beat", "migrate"):
        environment = services[name]["environment"]
        assert environment["DEBUG"] == "false"
        for key in ("SECRET_KEY", "DATABASE_URL", "REDIS_URL", "ALLOWED_HOSTS"):
            assert key in environment, (name, key)
    text = (ROOT / "docker-compose.yml").read_text()
    assert "${SECRET_KEY:?" in text and "${POSTGRES_PASSWORD:?" in text  # no default secrets


def test_the_worker_consumes_every_queue_and_data_lives_in_volumes():
    config = compose()
    worker = " ".join(config["services"]["worker"]["command"])
    assert "-Q default,watchers,telemetry" in worker
    assert set(config["volumes"]) == {"postgres-data", "redis-data"}


def test_the_image_runs_gunicorn_as_an_unprivileged_user():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "FROM python:3.11" in dockerfile
    assert "USER portal" in dockerfile
    assert "gunicorn" in dockerfile
    assert "collectstatic" in dockerfile
