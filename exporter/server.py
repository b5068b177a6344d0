"""The HTTP side: ``/metrics``, ``/devices``, ``/healthz`` on a threaded standard-library server.

``/healthz`` answers 200 while NVML is initialised and 503 with the reason otherwise (the
DaemonSet's probes use it). Scrapes run one at a time (``NvmlReader.read`` holds a lock), so
a slow NVML never piles up concurrent calls into the driver.
"""

from __future__ import annotations

import json
import logging
import signal
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any

from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

from exporter.config import parse_config
from exporter.inventory import inventory
from exporter.metrics import NodeCollector
from exporter.nvml import NvmlReader

__all__ = ["ExporterServer", "main", "make_registry"]

logger = logging.getLogger(__name__)


def make_registry(reader: NvmlReader) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NodeCollector(reader.read))
    return registry


class ExporterServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], reader: NvmlReader) -> None:
        self.reader = reader
        self.registry = make_registry(reader)
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: ExporterServer
    server_version = "dra-portal-exporter"

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._send(200, CONTENT_TYPE_LATEST, generate_latest(self.server.registry))
        elif path == "/devices":
            body = json.dumps(inventory(self.server.reader.read()), indent=2) + "\n"
            self._send(200, "application/json", body.encode())
        elif path == "/healthz":
            reader = self.server.reader
            if reader.start():
                self._send(200, "text/plain; charset=utf-8", b"ok\n")
            else:
                self._send(503, "text/plain; charset=utf-8", f"{reader.error}\n".encode())
        else:
            self._send(
                404, "text/plain; charset=utf-8", b"not found: /metrics, /devices, /healthz\n"
            )

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (inherited name)
        logger.debug("%s " + format, self.address_string(), *args)


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    config = parse_config(argv)
    reader = NvmlReader(
        hostname=config.hostname,
        slow_call_ttl=config.slow_call_ttl,
        proc_root=config.proc_root,
    )
    if not reader.start():
        logger.error(
            "serving anyway; /healthz answers 503 until NVML initialises: %s", reader.error
        )
    server = ExporterServer((config.host, config.port), reader)

    def stop(signum: int, frame: FrameType | None) -> None:
        # shutdown() waits for serve_forever, which runs in this thread: ask from another.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    logger.info("serving %s on %s:%d", config.hostname, config.host, server.server_port)
    try:
        server.serve_forever()
    finally:
        server.server_close()
        reader.close()
    return 0
