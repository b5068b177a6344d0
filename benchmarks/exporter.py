"""NVML exporter benchmark: CPU time per ``/metrics`` scrape of a DGX H100 (8 GPUs).

Run: ``.venv/bin/python benchmarks/exporter.py [--scrapes N]``. NVML is the fake of
``harness/fake_nvml.py`` (no GPU needed), so the figure is the exporter's own cost: the
Python around NVML plus ``prometheus_client``'s text rendering, not the driver's time in each
NVML call. Each scrape is ``generate_latest`` on the exporter's registry (read the node, build
the families, render the text), timed with ``time.process_time`` (CPU, not wall clock).
Target: ≤ 20 ms per scrape.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prometheus_client.exposition import generate_latest  # noqa: E402

from exporter.inventory import inventory  # noqa: E402
from exporter.nvml import NvmlReader  # noqa: E402
from exporter.server import make_registry  # noqa: E402
from harness.fake_nvml import dgx_h100_node  # noqa: E402

TARGET_MS = 20.0


def cpu_ms(action: object) -> float:
    start = time.process_time()
    action()  # type: ignore[operator]
    return (time.process_time() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scrapes", type=int, default=2000)
    args = parser.parse_args()

    fake = dgx_h100_node()
    reader = NvmlReader(hostname="dgx-h100-01", library=fake, proc_root=ROOT / "nonexistent")
    registry = make_registry(reader)

    print(f"Python {platform.python_version()} on {platform.machine()}, {platform.system()}")
    cold = cpu_ms(lambda: generate_latest(registry))
    body = generate_latest(registry)
    series = sum(1 for line in body.decode().splitlines() if line and not line.startswith("#"))
    calls_before = sum(fake.calls.values())
    generate_latest(registry)
    calls_per_scrape = sum(fake.calls.values()) - calls_before

    # process_time ticks coarsely on some kernels: time batches of 10, report per scrape.
    batch = 10
    samples = [
        cpu_ms(lambda: [generate_latest(registry) for _ in range(batch)]) / batch
        for _ in range(max(1, args.scrapes // batch))
    ]
    devices = [
        cpu_ms(lambda: [json.dumps(inventory(reader.read())) for _ in range(batch)]) / batch
        for _ in range(max(1, args.scrapes // batch // 4))
    ]
    p50 = statistics.median(samples)
    p95 = statistics.quantiles(samples, n=20)[-1]
    print(f"8 GPUs, {series} series, {len(body)} bytes, {calls_per_scrape} NVML calls per scrape")
    print(f"  first scrape (slow calls made, caches cold)   {cold:8.2f} ms CPU")
    mean = statistics.fmean(samples)
    print(f"  /metrics scrape, warm: mean                   {mean:8.2f} ms CPU")
    print(f"  /metrics scrape, warm: p50                    {p50:8.2f} ms CPU")
    print(f"  /metrics scrape, warm: p95                    {p95:8.2f} ms CPU")
    devices_p50 = statistics.median(devices)
    print(f"  /devices JSON, warm: p50                      {devices_p50:8.2f} ms CPU")
    verdict = "met" if p95 <= TARGET_MS else "MISSED"
    print(f"  target p95 <= {TARGET_MS:.0f} ms: {verdict}")


if __name__ == "__main__":
    main()
