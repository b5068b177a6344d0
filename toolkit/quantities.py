"""Device memory as people and the API write it: Kubernetes quantities (``640Gi``, ``80G``),
stored as whole bytes. The counterpart of ``toolkit.durations`` for memory."""

from __future__ import annotations

from fractions import Fraction

from dra.quantity import Quantity, QuantityError, parse_quantity

__all__ = ["MAX_BYTES", "QuantityError", "format_bytes", "format_bytes_roughly", "parse_bytes"]

MAX_BYTES = 2**63 - 1


def parse_bytes(text: str) -> int:
    """The bytes ``text`` names (``640Gi``, ``80G``, ``1073741824``), rounded up to a whole
    byte like Kubernetes' ``Value()``; :class:`QuantityError` says what is wrong with it."""
    value = text.strip()
    try:
        quantity = parse_quantity(value)
    except QuantityError:
        raise QuantityError(
            f"'{text[:40]}' is not a quantity: write e.g. 640Gi, 80Gi, 512Mi or 80G."
        ) from None
    if quantity.sign() < 0:
        raise QuantityError("A quantity of memory cannot be negative.")
    return min(quantity.ceil_int(), MAX_BYTES)


def format_bytes(value: int) -> str:
    """The shorter of the binary (``80Gi``) and decimal (``80G``) spellings; binary on a tie."""
    binary = str(Quantity(Fraction(value), "BinarySI"))
    decimal = str(Quantity(Fraction(value), "DecimalSI"))
    return decimal if len(decimal) < len(binary) else binary


_BINARY_UNITS = (("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def format_bytes_roughly(value: int) -> str:
    """For amounts people read rather than type back (usage): the exact quantity when it is
    short (``640Gi``), else one decimal of the largest binary unit (``318.6Gi`` rather than
    ``326236Mi``)."""
    exact = format_bytes(value)
    if len(exact) <= 6:
        return exact
    for suffix, size in _BINARY_UNITS:
        if value >= size:
            return f"{value / size:.1f}".removesuffix(".0") + suffix
    return exact
