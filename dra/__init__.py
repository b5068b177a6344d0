"""The DRA core: resource.k8s.io/v1 objects, quantities, semver, CEL, counters, what is in
use, and the structured allocator. Pure Python: no Django, no I/O (``mypy --strict``)."""
