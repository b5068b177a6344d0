"""A small in-process Kubernetes API server for tests and the demo (never imported by the portal).

with Emulator(port=0) as emu:
    emu.load_files("devices/fixtures")
    emu.kubeconfig("/tmp/kubeconfig")
"""

from .server import Emulator, Fault, ServingCertificate

__all__ = ["Emulator", "Fault", "ServingCertificate"]
