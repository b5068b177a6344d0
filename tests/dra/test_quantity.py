"""Kubernetes quantities: parsing, numeric comparison and canonical printing."""

from fractions import Fraction

import pytest

from dra.quantity import QuantityError, format_quantity, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("1", 1),
        ("80Gi", 80 * 2**30),
        ("81920Mi", 80 * 2**30),
        ("80G", 80 * 10**9),
        ("100m", Fraction(1, 10)),
        ("1.5", Fraction(3, 2)),
        ("1e3", 1000),
        ("1E-3", Fraction(1, 1000)),
        ("-2k", -2000),
        ("+5", 5),
        ("0.1n", Fraction(1, 10**9)),  # rounded up to the next nano
        ("1.", 1),
        ("1Ei", 2**60),
        ("99999999999999999999", 99999999999999999999),  # decimal: not capped (upstream)
        ("16Ei", 2**63 - 1),  # binary suffixes are capped
    ],
)
def test_it_parses_quantities_exactly(text, value):
    assert parse_quantity(text).value == Fraction(value)


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "1Q", "1 Gi", "--1", "1K", "1e"])
def test_it_rejects_strings_that_are_not_quantities(text):
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_it_compares_binary_and_decimal_suffixes_numerically():
    assert parse_quantity("80Gi") == parse_quantity("81920Mi")
    assert parse_quantity("80G") < parse_quantity("80Gi")
    assert parse_quantity("81559Mi") < parse_quantity("80Gi")


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("1000", "1k"),
        ("1500", "1500"),
        ("0.5", "500m"),
        ("1024", "1024"),
        ("1Ki", "1Ki"),
        ("1536", "1536"),
        ("81559Mi", "81559Mi"),
        ("80Gi", "80Gi"),
        ("1e3", "1e3"),
        ("2000000", "2M"),
        ("0.5Gi", "512Mi"),
    ],
)
def test_it_prints_quantities_in_canonical_form(text, printed):
    quantity = parse_quantity(text)
    assert format_quantity(quantity.value, quantity.format) == printed
