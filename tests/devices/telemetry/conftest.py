"""HTTP servers on loopback standing in for exporters and a Prometheus."""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[2] / "exporter" / "golden"
# The exporter's golden output came from a fake node; here it runs on the fixture's A100 node.
NODE = "dgx-a100-01"

# path → (status, content type, body), or a function of the query string's parameters → body
Routes = dict[str, tuple[int, str, bytes | Callable[[dict[str, list[str]]], bytes]]]


@pytest.fixture
def http_server() -> Iterator[Callable[[Routes], str]]:
    """``serve(routes)`` → ``host:port`` answering ``path → (status, content type, body)``;
    a path it does not know gets 404. Each call starts a server; all stop after the test."""
    servers: list[ThreadingHTTPServer] = []

    def serve(routes: Routes) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                path, _, query = self.path.partition("?")
                status, content_type, body = routes.get(path, (404, "text/plain", b"not found"))
                if callable(body):
                    body = body(urllib.parse.parse_qs(query))
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"127.0.0.1:{server.server_address[1]}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def exporter_routes() -> Routes:
    metrics = (GOLDEN / "metrics.txt").read_text().replace("gpu-node-01", NODE)
    devices = (GOLDEN / "devices.json").read_text().replace("gpu-node-01", NODE)
    return {
        "/metrics": (200, "text/plain; version=0.0.4", metrics.encode()),
        "/devices": (200, "application/json", devices.encode()),
    }


def fake_prometheus(*series: tuple[str, dict[str, str], float | str]) -> Callable[..., bytes]:
    """An ``/api/v1/query`` body answering the ingest's ``max by (labels) (METRIC)`` queries
    from ``(metric, labels, value)`` series as Prometheus would: that metric's series, only
    the grouping labels, the largest value of each group. Any other query is a 400-style
    error answer."""

    def answer(params: dict[str, list[str]]) -> bytes:
        query = (params.get("query") or [""])[0]
        match = re.fullmatch(r"max by \(([^)]*)\) \((\w+)\)", query)
        if match is None:
            return json.dumps(
                {"status": "error", "errorType": "bad_data", "error": f"cannot parse {query}"}
            ).encode()
        grouping = [label.strip() for label in match.group(1).split(",")]
        groups: dict[tuple, float] = {}
        for name, labels, value in series:
            if name == match.group(2):
                key = tuple((g, labels[g]) for g in grouping if labels.get(g))
                groups[key] = max(groups.get(key, float("-inf")), float(value))
        result = [
            {"metric": dict(key), "value": [1700000000.0, str(value)]}
            for key, value in groups.items()
        ]
        return json.dumps(
            {"status": "success", "data": {"resultType": "vector", "result": result}}
        ).encode()

    return answer
