"""The test PKI (``make.sh``): two control planes, each with its own CA and a serving
certificate for 127.0.0.1. For tests only; the keys are public."""

from pathlib import Path

from apiemulator import ServingCertificate

HERE = Path(__file__).resolve().parent
FIRST = ServingCertificate.in_directory(HERE / "first")
SECOND = ServingCertificate.in_directory(HERE / "second")
