"""GPU readings into the portal: collect them from a source (our exporters, a Prometheus, or a
simulation for the demo), join them to the mirrored DRA devices, keep the latest per device,
raw samples for a short window and 5-minute / hourly rollups. See docs/telemetry.md."""
