"""Request limits and the API's one error format, before any view or database sees a request.

``RequestLimitsMiddleware`` refuses what no view can answer sensibly: a path with a NUL byte
(PostgreSQL refuses NUL in text, so such a value can name nothing) or longer than
``REQUEST_PATH_MAX_CHARS``; a query string over ``QUERY_STRING_MAX_BYTES`` or
``QUERY_PARAMETERS_MAX`` parameters, or with a NUL byte; a body declared larger than
``DATA_UPLOAD_MAX_MEMORY_SIZE`` (413). ``ApiErrorFormatMiddleware`` then answers every error
under ``/api/`` that did not come from a DRF view (the router's 404, these limits, a 500) in
the API's format, ``{"error": {...}}`` (``portal.api.errors``).
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.views.defaults import bad_request
from rest_framework.response import Response

__all__ = ["ApiErrorFormatMiddleware", "RequestLimitsMiddleware", "is_api_request"]

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
