"""`python -m apiemulator --port 8001 --fixtures DIR_OR_FILES... --kubeconfig FILE`."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path

from .server import Emulator


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m apiemulator", description="Run the Kubernetes API emulator."
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8001, help="port (8001; 0 picks a free one)")
    parser.add_argument(
        "--fixtures", nargs="*", default=[], help="kubectl List JSON/YAML files or directories"
    )
    parser.add_argument(
        "--version", help="gitVersion served at /version (default: the newest the allocator knows)"
    )
    parser.add_argument("--kubeconfig", help="write a kubeconfig for the emulator to this file")
    parser.add_argument(
        "--bookmark-interval",
        type=float,
        default=60.0,
        help="seconds between watch bookmarks (60, as kube-apiserver; one more comes 2 s before "
        "a watch times out)",
    )
    parser.add_argument(
        "--initial-resource-version",
        type=int,
        default=0,
        help="start the history at this resourceVersion (0); a restart may start lower",
    )
    parser.add_argument(
        "--cluster-uid",
        help="uid of the kube-system namespace, the cluster's identity (random by default)",
    )
    parser.add_argument(
        "--gc-interval",
        type=float,
        default=2.0,
        help="seconds between garbage-collector passes (deletes objects whose owners are "
        "gone; 0 turns it off)",
    )
    parser.add_argument(
        "--history-window",
        type=float,
        default=300.0,
        help="seconds of watch history kept, as etcd's compaction keeps it (300, the real "
        "default; 0 keeps history until a test compacts it)",
    )
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)

    emulator = Emulator(
        args.host,
        args.port,
        version=args.version,
        bookmark_interval=args.bookmark_interval,
        initial_resource_version=args.initial_resource_version,
        cluster_uid=args.cluster_uid,
        garbage_collection_interval=args.gc_interval or None,
        history_window=args.history_window or None,
        verbose=args.verbose,
    )
    loaded = emulator.load_files(*args.fixtures) if args.fixtures else 0
    emulator.start()
    if args.kubeconfig:
        kubeconfig = Path(args.kubeconfig)
    else:
        handle, name = tempfile.mkstemp(prefix="apiemulator-", suffix=".kubeconfig")
        Path(name).chmod(0o600)
        kubeconfig = Path(name)
        os.close(handle)
    emulator.kubeconfig(kubeconfig)
    print(f"apiemulator {args.version} serving at {emulator.url}", flush=True)
    print(f"loaded {loaded} objects; resourceVersion {emulator.resource_version}", flush=True)
    print(f"cluster uid (kube-system): {emulator.cluster_uid}", flush=True)
    print(f"kubeconfig: {kubeconfig}", flush=True)
    print(f"try: KUBECONFIG={kubeconfig} kubectl get resourceslices", flush=True)

    stopped = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.set())
    stopped.wait()
    emulator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
