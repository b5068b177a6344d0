"""Error pages in the portal's own layout."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

__all__ = ["server_error"]


def server_error(request: HttpRequest) -> HttpResponse:
    # Rendered without the request context: whatever failed may be in a context processor.
    return render(None, "500.html", status=500)  # type: ignore[arg-type]
