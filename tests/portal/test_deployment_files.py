"""docker-compose.yml and the Dockerfile describe the production stack.

`docker compose config` cannot run on machines without the compose plugin (ours), so the
structure it would check is pinned here.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from portal.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_the_stack_has_every_service_with_health_checks_where_they_matter():
    services = compose()["services"]
    assert {"postgres", "redis", "migrate", "web", "worker", "watchers", "beat"} <= set(services)
    assert services["watchers"]["command"][:3] == ["python", "manage.py", "watch"]
    for name in ("postgres", "redis", "web", "worker", "watchers"):
        assert "test" in services[name]["healthcheck"], name
    assert services["web"]["depends_on"]["migrate"]["condition"] == (
        "service_completed_successfully"
    )


def test_the_app_services_run_in_production_mode_with_their_secrets_from_the_environment():
    services = compose()["services"]
    for name in ("web", "worker", "watchers", "beat", "migrate"):
        environment = services[name]["environment"]
        assert environment["DEBUG"] == "false"
        for key in ("SECRET_KEY", "DATABASE_URL", "REDIS_URL", "ALLOWED_HOSTS"):
            assert key in environment, (name, key)
    text = (ROOT / "docker-compose.yml").read_text()
    assert "${SECRET_KEY:?" in text and "${POSTGRES_PASSWORD:?" in text  # no default secrets


def _queues(command: list[str]) -> set[str]:
    return set(command[command.index("-Q") + 1].split(",")) if "-Q" in command else set()


def test_every_celery_queue_has_a_consumer_and_allocations_exactly_one_process():
    services = compose()["services"]
    consumers = {name: _queues(s.get("command") or []) for name, s in services.items()}
    declared = {queue.name for queue in celery_app.conf.task_queues}
    routed = {route["queue"] for route in celery_app.conf.task_routes.values()}
    assert routed <= declared
    assert declared <= set().union(*consumers.values())
    (allocator,) = [name for name, queues in consumers.items() if "allocations" in queues]
    command = services[allocator]["command"]
    assert consumers[allocator] == {"allocations"}
    assert command[command.index("--concurrency") + 1] == "1"


def test_data_lives_in_volumes():
    assert set(compose()["volumes"]) == {"postgres-data", "redis-data"}


def test_the_image_runs_gunicorn_as_a_numeric_unprivileged_user():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "FROM python:3.11" in dockerfile
    # Numeric: Kubernetes' runAsNonRoot cannot check a user name.
    assert "USER 10001:10001" in dockerfile
    assert "--uid 10001" in dockerfile and "--gid 10001" in dockerfile
    assert "gunicorn" in dockerfile
    assert "collectstatic" in dockerfile


def test_local_state_and_secrets_stay_out_of_the_image():
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    # var/ holds the demo's secret key and passwords, .env the compose stack's secrets.
    assert {".env", "var/", ".venv/", ".git/"} <= ignored
