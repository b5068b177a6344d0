"""Kubernetes ``resource.Quantity``: parsing, exact comparison and canonical formatting.

A quantity is kept as an exact :class:`fractions.Fraction` plus the format it was written in
(``DecimalSI``, ``BinarySI`` or ``DecimalExponent``), which only matters when it is printed back.
Parsing follows ``k8s.io/apimachinery/pkg/api/resource.ParseQuantity``: the same grammar and error
messages, values that need more precision than nano units are rounded *up* (away from zero) to the
next nano, and magnitudes beyond ``2**63 - 1`` are capped. Comparison is numeric, so
``80Gi == 81920Mi`` and ``80G < 80Gi``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Literal

__all__ = [
    "Quantity",
    "QuantityError",
    "parse_quantity",
    "is_quantity",
]

QuantityFormat = Literal["DecimalSI", "BinarySI", "DecimalExponent"]

_FORMAT_PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
FORMAT_WRONG = f"quantities must match the regular expression '{_FORMAT_PATTERN}'"
NUMERIC_WRONG = "unable to parse numeric part of quantity"
SUFFIX_WRONG = "unable to parse quantity's suffix"

_MAX_MAGNITUDE = Fraction(2**63 - 1)
_NANO = Fraction(1, 10**9)

_DECIMAL_SUFFIXES: dict[str, int] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_DECIMAL_SUFFIX_BY_EXPONENT = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIXES: dict[str, int] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_SUFFIX_BY_POWER = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
_SUFFIX_CHARACTERS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity; the message is upstream's wording."""


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact quantity. Equality and ordering are numeric; ``format`` only affects ``str()``."""

    value: Fraction
    format: QuantityFormat = "DecimalSI"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __le__(self, other: Quantity) -> bool:
        return self.value <= other.value

    def __gt__(self, other: Quantity) -> bool:
        return self.value > other.value

    def __ge__(self, other: Quantity) -> bool:
        return self.value >= other.value

    def compare(self, other: Quantity) -> int:
        """-1, 0 or 1 like Go's ``Quantity.Cmp``."""
        return (self.value > other.value) - (self.value < other.value)

    def add(self, other: Quantity) -> Quantity:
        """The sum, printed in this quantity's format (Go's ``Add`` keeps the receiver's)."""
        return Quantity(self.value + other.value, self.format)

    def sub(self, other: Quantity) -> Quantity:
        """The difference, printed in this quantity's format."""
        return Quantity(self.value - other.value, self.format)

    def sign(self) -> int:
        return (self.value > 0) - (self.value < 0)

    def as_int64(self) -> int | None:
        """The value as an int64 if it is a whole number in range, else None (Go's ``AsInt64``)."""
        if self.value.denominator != 1:
            return None
        number = self.value.numerator
        if -(2**63) <= number < 2**63:
            return number
        return None

    def ceil_int(self) -> int:
        """Go's ``Quantity.Value()``: rounded up to a whole number."""
        return math.ceil(self.value)

    def as_approximate_float(self) -> float:
        return float(self.value)

    def __str__(self) -> str:
        return format_quantity(self.value, self.format)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"


def _interpret_suffix(suffix: str) -> tuple[int, int, QuantityFormat] | None:
    """(base, exponent, format) for a suffix, or None when it is not one Kubernetes knows."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], "DecimalSI"
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE":
        exponent_text = suffix[1:]
        digits = exponent_text[1:] if exponent_text[0] in "+-" else exponent_text
        if digits and all(character in _DIGITS for character in digits):
            return 10, int(exponent_text), "DecimalExponent"
    return None


def _split(text: str) -> tuple[bool, str, str, str]:
    """Split into (positive, numerator digits, denominator digits, suffix) like upstream."""
    positive = True
    position = 0
    end = len(text)
    if text[0] == "-":
        positive = False
        position = 1
    elif text[0] == "+":
        position = 1
    while position < end and text[position] == "0":
        position += 1
    if position >= end:
        return positive, "0", "", ""
    start = position
    while position < end and text[position] in _DIGITS:
        position += 1
    numerator = text[start:position] or "0"
    denominator = ""
    if position < end and text[position] == ".":
        position += 1
        start = position
        while position < end and text[position] in _DIGITS:
            position += 1
        denominator = text[start:position]
    suffix_start = position
    while position < end and text[position] in _SUFFIX_CHARACTERS:
        position += 1
    if position < end and text[position] in "+-":
        position += 1
    while position < end and text[position] in _DIGITS:
        position += 1
    if position < end:
        raise QuantityError(FORMAT_WRONG)
    return positive, numerator, denominator, text[suffix_start:]


@lru_cache(maxsize=4096)
def parse_quantity(text: str) -> Quantity:
    """Parse a quantity string; raises :class:`QuantityError` with upstream's message."""
    if not text:
        raise QuantityError(FORMAT_WRONG)
    if text == "0":
        return Quantity(Fraction(0), "DecimalSI")
    positive, numerator, denominator, suffix = _split(text)
    interpreted = _interpret_suffix(suffix)
    if interpreted is None:
        raise QuantityError(SUFFIX_WRONG)
    base, exponent, quantity_format = interpreted
    magnitude = Fraction(int(numerator + denominator or "0"), 10 ** len(denominator))
    if base == 10:
        magnitude *= Fraction(10) ** exponent
    else:
        magnitude *= 2**exponent
    if magnitude % _NANO:
        magnitude = Fraction(math.ceil(magnitude / _NANO)) * _NANO
    magnitude = min(magnitude, _MAX_MAGNITUDE)
    if quantity_format == "BinarySI" and 0 < magnitude < 1:
        quantity_format = "DecimalSI"
    return Quantity(magnitude if positive else -magnitude, quantity_format)


def is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _decimal_parts(value: Fraction) -> tuple[int, int]:
    """(mantissa, exponent) with exponent a multiple of 3, as large as keeps the mantissa whole."""
    exponent = 0
    while value.denominator != 1:
        value *= 1000
        exponent -= 3
    mantissa = value.numerator
    while mantissa != 0 and mantissa % 1000 == 0:
        mantissa //= 1000
        exponent += 3
    return mantissa, exponent


@lru_cache(maxsize=4096)
def format_quantity(value: Fraction, quantity_format: QuantityFormat) -> str:
    """Go's canonical ``Quantity.String()`` for a value and format."""
    if value == 0:
        return "0"
    if quantity_format == "BinarySI" and (-1024 < value < 1024 or value.denominator != 1):
        quantity_format = "DecimalSI"
    if quantity_format == "BinarySI":
        mantissa = value.numerator
        power = 0
        while power < 6 and mantissa % 1024 == 0:
            mantissa //= 1024
            power += 1
        return f"{mantissa}{_BINARY_SUFFIX_BY_POWER[power]}"
    mantissa, exponent = _decimal_parts(value)
    if quantity_format == "DecimalSI" and exponent in _DECIMAL_SUFFIX_BY_EXPONENT:
        return f"{mantissa}{_DECIMAL_SUFFIX_BY_EXPONENT[exponent]}"
    if exponent == 0:
        return str(mantissa)
    return f"{mantissa}e{exponent}"
