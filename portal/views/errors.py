"""Error pages in the portal's own layout."""

from __future__ import annotations

import sys

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from portal.middleware import unavailable_response
from portal.outages import outage_of

__all__ = ["server_error"]


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: called while the exception is being handled. One that means the
    database or Redis is away (raised outside a view, e.g. saving the session) answers 503 as
    ``ServiceUnavailableMiddleware`` does for views."""
    error = sys.exc_info()[1]
    service = outage_of(error) if error is not None else None
    if service is not None:
        return unavailable_response(request, service)
    # Rendered without the request context: whatever failed may be in a context processor.
    return render(None, "500.html", status=500)
