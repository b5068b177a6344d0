"""The operations endpoints (docs/operations.md): ``/healthz`` (the process answers),
``/readyz`` (what it stands on, each check with a reason) and ``/metrics`` (Prometheus).

All three are anonymous and answered by ``portal.middleware.ProbeMiddleware`` before host
validation, the HTTPS redirect and sessions. ``/readyz`` names no secret; ``/metrics`` is
served only to ``METRICS_ALLOWED_NETWORKS`` or with ``Authorization: Bearer <METRICS_TOKEN>``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from prometheus_client.core import GaugeMetricFamily, Metric

from mirror.health import apiserver_check, mirror_check
from portal.health import Check, database_check, redis_check
from portal.metrics import (
    CONTENT_TYPE,
    FORBIDDEN,
    PREFIX,
    CachedCollector,
    exposition,
    is_scrape_allowed,
)

__all__ = ["CHECKS", "ReadinessCollector", "healthz", "metrics", "readiness", "readyz"]

# The readiness checks, in the order /readyz lists them.
CHECKS: dict[str, Callable[[], Check]] = {
    "database": database_check,
    "redis": redis_check,
    "mirror": mirror_check,
    "apiserver": apiserver_check,
}


def readiness(exclude: Iterable[str] = ()) -> tuple[bool, dict[str, Check | None]]:
    """(ready, check name → result); an excluded check is not run (None) and does not count."""
    skipped = set(exclude)
    results: dict[str, Check | None] = {
        name: None if name in skipped else check() for name, check in CHECKS.items()
    }
    return all(result.ok for result in results.values() if result is not None), results


@never_cache
def healthz(request: HttpRequest) -> HttpResponse:
    """The process answers: nothing else is looked at (no database, no Redis)."""
    return JsonResponse({"status": "ok"})


@never_cache
def readyz(request: HttpRequest) -> HttpResponse:
    """200 when every check passes, else 503; the body lists each check with ``ok`` and a
    ``reason``. ``?exclude=<check>`` (repeatable, as kube-apiserver's) leaves a check out: the
    web's readiness probe excludes ``mirror`` and ``apiserver``, which no web pod can fix."""
    exclude = [name for value in request.GET.getlist("exclude") for name in value.split(",")]
    unknown = sorted(set(exclude) - set(CHECKS))
    if unknown:
        return JsonResponse(
            {"error": f"Unknown check {', '.join(unknown)}: the checks are {', '.join(CHECKS)}."},
            status=400,
        )
    ready, results = readiness(exclude)
    body = {
        "status": "ok" if ready else "unavailable",
        "checks": {
            name: {"excluded": True} if result is None else result.as_json()
            for name, result in results.items()
        },
    }
    return JsonResponse(body, status=200 if ready else 503)


@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    if not is_scrape_allowed(request.META.get("REMOTE_ADDR"), request.headers.get("Authorization")):
        return HttpResponse(FORBIDDEN, status=403, content_type="text/plain; charset=utf-8")
    return HttpResponse(exposition(), content_type=CONTENT_TYPE)


class ReadinessCollector(CachedCollector):
    """``dra_portal_ready{check}``: the readiness checks as metrics, so that an alert sees a
    failing ``/readyz`` without a blackbox prober."""

    name = "readiness"

    def read(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            f"{PREFIX}_ready",
            "1 when the readiness check passes, else 0 (the checks of /readyz).",
            labels=["check"],
        )
        for name, result in readiness()[1].items():
            if result is not None:
                family.add_metric([name], 1.0 if result.ok else 0.0)
        yield family
