"""The CEL environment of DRA selectors, evaluated with cel-expr-python (Google's cel-cpp).

The DRA core's CEL package; only ``dra.cel.environment`` imports ``cel_expr_python`` (STYLE §8).
It provides:

* the Kubernetes environment: ``device.driver``, ``device.attributes``, ``device.capacity``,
  ``device.allowMultipleAllocations``; unknown attribute/capacity domains read as empty maps,
  a missing id inside a domain is a runtime error; strings (v2), sets, lists, optional types,
  ``cel.bind``; ``quantity()``/``semver()`` and their methods; ``find``/``findAll``; Kubernetes'
  lists library (:mod:`dra.cel.lists`);
* Kubernetes' exact numeric semantics for quantities (``80Gi == 81920Mi``) and semver
  precedence (build metadata ignored) — both are carried as small maps holding a canonical key,
  so ``==`` compares values and no ordering operator applies to them (as in Kubernetes);
* limits: expressions over 10 Ki characters or nested deeper than 50 levels do not compile;
  evaluation is cancelled ("operation cancelled: actual cost limit exceeded") past a cost of
  1,000,000 metered by :mod:`dra.cel.costs` (cel-cpp has no cost tracker) or past cel-cpp's
  10,000 comprehension iterations (docs/allocator.md, "Limits");
* caches: compiled programs by expression, and results by (expression, the values of the device
  paths the expression reads), so devices of one model share one evaluation.

Why a parser of our own next to the binding: cel-expr-python cannot declare an object type or a
map with a default, so selectors are rewritten before compiling (see :mod:`dra.cel.reads`).
"""

from dra.cel.devices import DeviceInput, device_input, input_from_reads
from dra.cel.environment import MAX_EXPRESSION_LENGTH, quantity_literal, semver_literal
from dra.cel.errors import CelCompileError, CelRuntimeError
from dra.cel.selectors import CompiledSelector, clear_caches, compile_selector, selector_errors

__all__ = [
    "MAX_EXPRESSION_LENGTH",
    "CelCompileError",
    "CelRuntimeError",
    "CompiledSelector",
    "DeviceInput",
    "clear_caches",
    "compile_selector",
    "device_input",
    "input_from_reads",
    "quantity_literal",
    "selector_errors",
    "semver_literal",
]
