"""The NVML node exporter: one process per GPU node (a DaemonSet), no Django.

It reads the node's GPUs through NVML (``pynvml``, the only package here that may import it)
and serves ``/metrics`` (Prometheus text with dcgm-exporter's metric and label names),
``/devices`` (facts and topology as JSON) and ``/healthz``. See ``docs/exporter.md``.
"""
