"""Kubernetes ``resource.Quantity``: parsing, exact comparison and canonical formatting.

A quantity is kept as an exact :class:`fractions.Fraction` plus the format it was written in
(``DecimalSI``, ``BinarySI`` or ``DecimalExponent``), which only matters when it is printed back.
Parsing follows ``k8s.io/apimachinery/pkg/api/resource.ParseQuantity``: the same grammar and error
messages, values that need more precision than nano units are rounded *up* (away from zero) to the
next nano, and binary-suffixed magnitudes beyond ``2**63 - 1`` are capped (decimal ones are not:
``1e20`` stays ``1e20``). Comparison is numeric and exact, so ``80Gi == 81920Mi``, ``80G < 80Gi``
and ``2e19 > 1e19``.

:class:`Stored` is how Go holds the value, which decides what CEL's ``isInteger()``,
``asInteger()`` and ``asApproximateFloat()`` answer: an ``int64Amount`` (value and scale) when the
string is short enough for the fast path, else an ``inf.Dec`` at nano scale (``2.0`` is
``int64Amount{20, -1}``, not an integer to ``AsInt64``; ``1.5Gi`` and ``1Ei`` are ``inf.Dec``).
The rules follow upstream's ``quantity.go`` and ``amount.go``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Literal

__all__ = [
    "Quantity",
    "QuantityError",
    "Stored",
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
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_MAX_INT64_FACTORS = 18  # decimal digits an int64 always holds
# Go's math.Pow10 tables: exact powers below 1e32, products of two above (rounded the same way).
_POW10 = [float(10**n) for n in range(32)]
_POW10_POS32 = [float(f"1e{32 * n}") for n in range(10)]
_POW10_NEG32 = [float(f"1e-{32 * n}") for n in range(11)]


def _pow10(n: int) -> float:
    """Go's ``math.Pow10`` (bit for bit)."""
    if 0 <= n <= 308:
        return _POW10_POS32[n // 32] * _POW10[n % 32]
    if -323 <= n < 0:
        return _POW10_NEG32[-n // 32] / _POW10[-n % 32]
    return math.inf if n > 0 else 0.0


def _fits(number: int) -> bool:
    return _INT64_MIN <= number <= _INT64_MAX


@dataclass(frozen=True, slots=True)
class Stored:
    """How Go's ``resource.Quantity`` holds its value: ``unscaled · 10**exponent``, as an
    ``int64Amount`` (``decimal`` False: ``{value: unscaled, scale: exponent}``) or an ``inf.Dec``
    (``decimal`` True: unscaled big integer, ``Scale() == -exponent``)."""

    unscaled: int
    exponent: int
    decimal: bool

    def as_int64(self) -> int | None:
        """Go's ``Quantity.AsInt64``: only an int64Amount of scale 0, or a positive scale that
        does not overflow."""
        if self.decimal or self.exponent < 0:
            return None
        number = self.unscaled * 10**self.exponent
        return number if _fits(number) else None

    def approximate_float(self) -> float:
        """Go's ``Quantity.AsApproximateFloat64``: ``float64(unscaled) * math.Pow10(exponent)``."""
        base = float(self.unscaled)
        return base if self.exponent == 0 else base * _pow10(self.exponent)

    def plus(self, other: Stored) -> Stored:
        """Go's ``Quantity.Add``: int64Amounts add exactly while they fit (aligned to the smaller
        scale), else both become ``inf.Dec`` (aligned to the larger ``Scale``)."""
        if not self.decimal and not other.decimal:
            added = _int64_add(self, other)
            if added is not None:
                return added
        exponent = min(self.exponent, other.exponent)
        total = self.unscaled * 10 ** (self.exponent - exponent) + other.unscaled * 10 ** (
            other.exponent - exponent
        )
        return Stored(total, exponent, True)

    def negated(self) -> Stored:
        return Stored(-self.unscaled, self.exponent, self.decimal)

    def encode(self) -> str:
        return f"{'d' if self.decimal else 'i'}{self.unscaled}e{self.exponent}"

    @staticmethod
    def decode(text: str) -> Stored:
        unscaled, _, exponent = text[1:].partition("e")
        return Stored(int(unscaled), int(exponent), text[0] == "d")


def _int64_add(a: Stored, b: Stored) -> Stored | None:
    """``int64Amount.Add``; None where it overflows (Go then falls back to ``inf.Dec``)."""
    if b.unscaled == 0:
        return a
    if a.unscaled == 0:
        return b
    if a.exponent == b.exponent:
        total, exponent = a.unscaled + b.unscaled, a.exponent
    else:
        high, low = (a, b) if a.exponent > b.exponent else (b, a)
        scaled = high.unscaled * 10 ** (high.exponent - low.exponent)
        if not _fits(scaled):
            return None
        total, exponent = scaled + low.unscaled, low.exponent
    return Stored(total, exponent, False) if _fits(total) else None


def _default_stored(value: Fraction) -> Stored:
    """What a quantity built from a number holds (``resource.NewQuantity`` for whole numbers)."""
    if value.denominator == 1 and _fits(value.numerator):
        return Stored(value.numerator, 0, False)
    return Stored(math.ceil(value / _NANO), -9, True)


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
    stored: Stored | None = field(default=None)

    @property
    def held(self) -> Stored:
        """How Go holds it (:class:`Stored`); for a quantity built from a number, as
        ``resource.NewQuantity`` would."""
        return self.stored if self.stored is not None else _default_stored(self.value)

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
        return Quantity(self.value + other.value, self.format, self.held.plus(other.held))

    def sub(self, other: Quantity) -> Quantity:
        """The difference, printed in this quantity's format."""
        held = self.held.plus(other.held.negated())
        return Quantity(self.value - other.value, self.format, held)

    def sign(self) -> int:
        return (self.value > 0) - (self.value < 0)

    def as_int64(self) -> int | None:
        """Go's ``AsInt64``: the value if Go holds it as a whole int64 (``2.0``, ``1.5Gi`` and
        ``1Ei`` it does not, see :class:`Stored`), else None."""
        return self.held.as_int64()

    def ceil_int(self) -> int:
        """Go's ``Quantity.Value()``: rounded up to a whole number."""
        return math.ceil(self.value)

    def ceil_int64(self) -> int:
        """:meth:`ceil_int` within int64 (a database column's range): a decimal quantity may
        exceed it (``1e20``), as upstream allows."""
        return max(_INT64_MIN, min(math.ceil(self.value), _INT64_MAX))

    def as_approximate_float(self) -> float:
        """Go's ``AsApproximateFloat64``, computed as Go computes it."""
        return self.held.approximate_float()

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
        return Quantity(Fraction(0), "DecimalSI", Stored(0, 0, False))
    positive, numerator, denominator, suffix = _split(text)
    interpreted = _interpret_suffix(suffix)
    if interpreted is None:
        raise QuantityError(SUFFIX_WRONG)
    base, exponent, quantity_format = interpreted
    fast = _fast_path(numerator, denominator, base, exponent)
    if fast is not None:
        unscaled, scale = fast
        unscaled = unscaled if positive else -unscaled
        value = Fraction(unscaled) * Fraction(10) ** scale
        return Quantity(value, quantity_format, Stored(unscaled, scale, False))
    # inf.Dec: the digits, the suffix folded in, rounded up to a nano (never down to zero).
    digits = int(numerator + denominator or "0")
    if base == 10:
        magnitude = Fraction(digits) * Fraction(10) ** (exponent - len(denominator))
    else:
        magnitude = Fraction(digits * 2**exponent, 10 ** len(denominator))
    stored_exponent = -len(denominator)
    if magnitude:
        magnitude = Fraction(math.ceil(magnitude / _NANO)) * _NANO
        stored_exponent = -9
    if quantity_format == "BinarySI" and magnitude > _MAX_MAGNITUDE:
        magnitude, stored_exponent = _MAX_MAGNITUDE, 0  # inf.Dec.Set: the cap's own scale
    if quantity_format == "BinarySI" and 0 < magnitude < 1:
        quantity_format = "DecimalSI"
    unscaled = int(magnitude / Fraction(10) ** stored_exponent)
    if not positive:
        magnitude, unscaled = -magnitude, -unscaled
    return Quantity(magnitude, quantity_format, Stored(unscaled, stored_exponent, True))


def _fast_path(
    numerator: str, denominator: str, base: int, exponent: int
) -> tuple[int, int] | None:
    """Upstream's int64Amount fast path of ``ParseQuantity``: (value, scale), or None when the
    string is too long for it (then the value is an ``inf.Dec``)."""
    if base == 10:
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(numerator) + len(denominator))
        mantissa = 1
    elif exponent >= 0 and not denominator:
        scale = 0
        mantissa = 1 << exponent
        # Go: 15 - len(num) - int32(float32(exponent)*3/10) - 1
        precision = 15 - len(numerator) - int(exponent * 3 / 10) - 1
    else:
        return None
    if precision < 0:
        return None
    scale -= len(denominator)
    if scale < -9:
        return None
    result = int(numerator + denominator) * mantissa
    return (result, scale) if _fits(result) else None


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
