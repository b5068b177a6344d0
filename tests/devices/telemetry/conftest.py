"""HTTP servers on loopback standing in for exporters and a Prometheus."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[2] / "exporter" / "golden"
# The exporter's golden output came from a fake node; here it runs on the fixture's A100 node.
NODE = "dgx-a100-01"

Routes = dict[str, tuple[int, str, bytes]]


@pytest.fixture
def http_server() -> Iterator[Callable[[Routes], str]]:
    """``serve(routes)`` → ``host:port`` answering ``path → (status, content type, body)``;
    a path it does not know gets 404. Each call starts a server; all stop after the test."""
    servers: list[ThreadingHTTPServer] = []

    def serve(routes: Routes) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                status, content_type, body = routes.get(
                    self.path.split("?")[0], (404, "text/plain", b"not found")
                )
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
