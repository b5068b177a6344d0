"""What the portal's own metrics cost where they are measured (docs/operations.md).

Run: ``.venv/bin/python benchmarks/metrics.py``. No database needed. Times, per call, what the
code adds on its hot paths: a watch batch's commit (two ``perf_counter`` calls and one
``observe`` on the kind's cached child, ``mirror/reflector.py``) and a request
(``labels(view, method, status).observe``, ``portal/middleware.py``), in one process and in
multi-process mode (``PROMETHEUS_MULTIPROC_DIR``: a child process, since the client library
picks its value class at import). Compare with a watch batch's commit, ~110 ms for 500 claim
events at 5,000 nodes (docs/benchmarks.md), and with a page, tens of milliseconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CALLS = 200_000

MEASURE = f"""
import time, timeit
from portal.metrics import MIRROR_BATCH_SECONDS, REQUEST_SECONDS
batch = MIRROR_BATCH_SECONDS.labels("resourceclaims")

def commit():
    started = time.perf_counter()
    batch.observe(time.perf_counter() - started)

def request():
    REQUEST_SECONDS.labels("device-list", "GET", "2xx").observe(0.042)

for name, call in (("batch", commit), ("request", request)):
    call()
    best = min(timeit.repeat(call, number={CALLS}, repeat=5)) / {CALLS}
    print(name, best)
"""


def measure(multiprocess_dir: str | None) -> dict[str, float]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "portal.settings"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    if multiprocess_dir:
        env["PROMETHEUS_MULTIPROC_DIR"] = multiprocess_dir
    output = subprocess.run(
        [sys.executable, "-c", MEASURE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {name: float(value) for name, value in (line.split() for line in output.splitlines())}


def main() -> None:
    single = measure(None)
    with tempfile.TemporaryDirectory() as folder:
        multi = measure(folder)
    print(f"{'per call':<48} {'one process':>12} {'multi-process':>14}")
    for name, label in (
        ("batch", "watch batch: 2 × perf_counter + observe"),
        ("request", "request: labels(view, method, status) + observe"),
    ):
        print(f"{label:<48} {single[name] * 1e6:>9.2f} µs {multi[name] * 1e6:>11.2f} µs")
    share = multi["batch"] / 0.110
    print(f"\nwatch batch overhead vs a 110 ms commit of 500 claim events: {share:.6%}")
    python = sys.version.split()[0]
    print(f"timeit: best of 5 × {CALLS:,} calls; {os.cpu_count()} CPUs, Python {python}")


if __name__ == "__main__":
    main()
