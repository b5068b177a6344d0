"""A tiny loopback HTTP GET for the exporter's tests: (status, content type, body)."""

from __future__ import annotations

import urllib.error
import urllib.request


def get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()
