"""Request ids, timing and probes; request limits and the API's one error format, before any
view or database sees a request; and 503 while the database or Redis is away.

The order in ``settings.MIDDLEWARE`` (outermost first) is part of the contract:

1. ``RequestIdMiddleware`` gives the request its id (``X-Request-ID``, honoured when well
   formed, else generated; echoed on the response) and the log context (``portal.logs``).
2. ``RequestTimingMiddleware`` measures every answer, whatever produced it, by view
   (``portal.metrics``), and logs one line per request when ``LOG_REQUESTS`` is on.
3. ``ProbeMiddleware`` answers ``/healthz``, ``/readyz`` and ``/metrics`` itself, before host
   validation (``CommonMiddleware``), sessions and authentication: the kubelet and Prometheus
   address pods by IP over plain HTTP (``SECURE_REDIRECT_EXEMPT`` spares them the HTTPS
   redirect), and a probe must not need the database to be answered. Middleware that only adds
   response headers may come before it.
4. ``ApiErrorFormatMiddleware`` and ``RequestLimitsMiddleware`` (below), then Django's and
   other packages' middleware, and innermost ``ServiceUnavailableMiddleware``, which turns an
   outage raised by a view into a 503 before any other handler sees it.

``RequestLimitsMiddleware`` refuses what no view can answer sensibly: a path with a NUL byte
(PostgreSQL refuses NUL in text, so such a value can name nothing) or longer than
``REQUEST_PATH_MAX_CHARS``; a query string over ``QUERY_STRING_MAX_BYTES`` or
``QUERY_PARAMETERS_MAX`` parameters, or with a NUL byte; a body declared larger than
``DATA_UPLOAD_MAX_MEMORY_SIZE`` (413). ``ApiErrorFormatMiddleware`` then answers every error
under ``/api/`` that did not come from a DRF view (the router's 404, these limits, a 500) in
the API's format, ``{"error": {...}}`` (``toolkit.api.errors``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.template.loader import render_to_string
from django.urls import Resolver404, resolve
from django.views.defaults import bad_request
from rest_framework.response import Response

from portal.logs import log_context, request_id_from
from portal.metrics import REQUEST_SECONDS
from portal.outages import RETRY_AFTER_SECONDS, outage_of

__all__ = [
    "ApiErrorFormatMiddleware",
    "ProbeMiddleware",
    "RequestIdMiddleware",
    "RequestLimitsMiddleware",
    "RequestTimingMiddleware",
    "ServiceUnavailableMiddleware",
    "is_api_request",
    "unavailable_response",
]

logger = logging.getLogger(__name__)
access_logger = logging.getLogger("portal.access")

API_PREFIX = "/api/"

# What the API's error format says for an error that no DRF view produced.
ERROR_CODES = {
    400: ("bad_request", "The request is malformed."),
    401: ("not_authenticated", "Authentication credentials were not provided."),
    403: ("permission_denied", "You do not have permission to do this."),
    404: ("not_found", "Not found."),
    405: ("method_not_allowed", "This method is not allowed here."),
    413: ("request_too_large", "The request body is too large."),
    414: ("uri_too_long", "The request URI is too long."),
    429: ("throttled", "Too many requests."),
    503: ("service_unavailable", "The service is unavailable for a moment; try again shortly."),
}
# Headers an error keeps when its body is replaced.
KEPT_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate", "Vary")


def is_api_request(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX)


def api_error(status: int, message: str | None = None, code: str | None = None) -> JsonResponse:
    """An error response in the API's format."""
    default_code, default_message = ERROR_CODES.get(status, ("error", "The server failed."))
    body = {"status": status, "code": code or default_code, "message": message or default_message}
    return JsonResponse({"error": body}, status=status)


class RequestLimitsMiddleware:
    """Refuses hostile paths (404), query strings (400) and bodies (413); see the module."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        refusal = self.refusal(request)
        if refusal is None:
            return self.get_response(request)
        status, message = refusal
        if is_api_request(request):
            return api_error(status, message)
        if status == 404:
            raise Http404(message)
        if status == 400:
            return bad_request(request, BadRequest(message))
        return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")

    @staticmethod
    def refusal(request: HttpRequest) -> tuple[int, str] | None:
        """(status, message) of the first limit the request breaks; None if it breaks none."""
        path = request.path_info
        if "\x00" in path or len(path) > settings.REQUEST_PATH_MAX_CHARS:
            return 404, "Not found."
        query = request.META.get("QUERY_STRING", "")
        if len(query) > (most := settings.QUERY_STRING_MAX_BYTES):
            return 400, f"The query string is longer than {most} bytes."
        if query.count("&") + 1 > (most := settings.QUERY_PARAMETERS_MAX):
            return 400, f"The query string has more than {most} parameters."
        if b"\x00" in unquote_to_bytes(query):
            return 400, "The query string contains a NUL byte."
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return 400, "Content-Length is not a number."
        if length < 0:
            return 400, "Content-Length is negative."
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and length > limit:
            return 413, f"The request body is larger than {limit} bytes."
        return None


class ApiErrorFormatMiddleware:
    """Under ``/api/``, an error response not rendered by DRF (whose exception handler already
    uses the format) is replaced by the same status in the API's format. Outermost, so that it
    sees the errors of every other middleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if (
            response.status_code < 400
            or isinstance(response, Response)
            or not is_api_request(request)
            or response.get("Content-Type", "").startswith("application/json")
        ):
            return response
        formatted = api_error(response.status_code)
        for header in KEPT_HEADERS:
            if header in response:
                formatted[header] = response[header]
        return formatted


# -- operations -----------------------------------------------------------------------------------

REQUEST_ID_HEADER = "X-Request-ID"
# Paths answered by ``ProbeMiddleware`` (their views are in ``home.operations``).
PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestIdMiddleware:
    """Outermost: the request's id and log context; the id goes back in ``X-Request-ID``."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        request_id = request_id_from(request.META.get("HTTP_X_REQUEST_ID"))
        request.request_id = request_id  # type: ignore[attr-defined]
        with log_context(
            request_id=request_id, request=request, path=request.path, method=request.method
        ):
            response = self.get_response(request)
        response[REQUEST_ID_HEADER] = request_id
        return response


class RequestTimingMiddleware:
    """Observes ``dra_portal_http_request_duration_seconds`` for every answer (by the view's
    name; ``unmatched`` when no URL matched) and, with ``LOG_REQUESTS``, logs it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        started = time.perf_counter()
        response = self.get_response(request)
        seconds = time.perf_counter() - started
        match = request.resolver_match
        view = (match.view_name if match is not None else "") or "unmatched"
        method = request.method if request.method in _METHODS else "other"
        status = f"{response.status_code // 100}xx"
        REQUEST_SECONDS.labels(view, method, status).observe(seconds)
        if settings.LOG_REQUESTS:
            access_logger.info(
                "%s %s %s %.1f ms",
                request.method,
                request.path,
                response.status_code,
                seconds * 1000,
                extra={
                    "status": response.status_code,
                    "duration_ms": round(seconds * 1000, 1),
                    "view": view,
                },
            )
        return response


class ProbeMiddleware:
    """Answers the probe and metrics paths by calling their views directly (see the module):
    no host check, no HTTPS redirect, no session, no database unless the view reads it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.path_info in PROBE_PATHS:
            try:
                match = resolve(request.path_info)
            except Resolver404:
                return self.get_response(request)
            request.resolver_match = match
            return match.func(request, *match.args, **match.kwargs)
        return self.get_response(request)


def unavailable_response(request: HttpRequest, service: str) -> HttpResponse:
    """503 with ``Retry-After``: the API's error format under ``/api/``, else the portal's
    page (rendered without the request's context: the context processors need the database
    and the cache)."""
    message = (
        f"The portal's {service} is not answering; it reconnects by itself. "
        f"Try again in {RETRY_AFTER_SECONDS} seconds."
    )
    if is_api_request(request):
        response: HttpResponse = api_error(503, message, code="service_unavailable")
    else:
        context = {"service": service, "retry_after": RETRY_AFTER_SECONDS}
        response = HttpResponse(render_to_string("503.html", context), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


class ServiceUnavailableMiddleware:
    """Innermost: a view that fails because the database or Redis is away answers 503
    (``portal.outages``); any other exception goes on to Django's 500 handling. Failures
    outside views (a session saved after the view) reach ``handler500``, which applies the
    same rule."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        service = outage_of(exception)
        if service is None:
            return None
        logger.warning(
            "%s unavailable, answered 503: %s: %s",
            service,
            type(exception).__name__,
            str(exception).strip().splitlines()[0] if str(exception).strip() else "",
        )
        return unavailable_response(request, service)
