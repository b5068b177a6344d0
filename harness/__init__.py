"""What the tests and the benchmarks share: a loopback production stack, a fake NVML, the
demo fixtures. Never imported by the portal itself (an import contract says so)."""
