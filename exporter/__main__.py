"""``python -m exporter --port 9400``: serve the node's GPUs until SIGTERM."""

from exporter.server import main

if __name__ == "__main__":
    raise SystemExit(main())
