"""Quantities as Kubernetes holds them (issue 26, item 9): ``resource.Quantity`` keeps a value as
an ``int64Amount`` (value, scale) when the string is short enough for its fast path, else as an
``inf.Dec`` at nano scale, and CEL's ``isInteger``/``asInteger``/``asApproximateFloat`` answer
from that, not from the number. Each expected value below is worked out from upstream's rules
(``k8s.io/apimachinery/pkg/api/resource``: ``ParseQuantity``, ``int64Amount.Add``, ``AsInt64``,
``AsApproximateFloat64``; the CEL library ``apiserver/pkg/cel/library/quantity.go``), in the
comment beside it. Only binary suffixes are capped at 2^63-1; comparisons are exact; ``==`` on
quantities compares values however they are held."""

from __future__ import annotations

import random

import pytest

from dra.cel import compile_selector, device_input
from dra.model import Device, DeviceCapacity
from dra.quantity import Stored, parse_quantity

NOTHING = device_input(Device(name="d", attributes={}, capacity={}), "example.com", False)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # precision 18 - len(digits) >= 0 and scale >= -9: int64Amount
        ('quantity("2").isInteger()', True),  # {2, 0}
        ('quantity("2.0").isInteger()', False),  # {20, -1}: AsInt64 refuses a negative scale
        ('quantity("0").isInteger()', True),
        ('quantity("0.0").isInteger()', False),  # {0, -1}
        ('quantity("2k").isInteger()', True),  # {2, 3}: positive scale, fits
        ('quantity("1536Mi").isInteger()', True),  # binary fast path: precision 15-4-6-1 = 4
        ('quantity("512").isInteger()', True),
        ('quantity("922337203685477580").isInteger()', True),  # 18 digits: fast path
        # the inf.Dec path: never an int64 to AsInt64
        ('quantity("1.5Gi").isInteger()', False),  # a binary suffix with a fraction
        ('quantity("0.5Ki").isInteger()', False),
        ('quantity("1Ei").isInteger()', False),  # precision 15-1-18-1 < 0
        ('quantity("1024Pi").isInteger()', False),
        ('quantity("8Ei").isInteger()', False),  # and capped at 2^63-1
        ('quantity("9223372036854775806").isInteger()', False),  # 19 digits
        ('quantity("9223372036854775.806k").isInteger()', False),
        # beyond int64
        ('quantity("1e19").isInteger()', False),  # {1, 19}: overflows when scaled
        ('quantity("10E").isInteger()', False),
        ('quantity("4e18").add(quantity("4e18")).asInteger() == 8000000000000000000', True),
        ('quantity("1k").asInteger() == 1000', True),
        # arithmetic keeps int64Amounts while they fit, at the smaller scale
        ('quantity("1.5").add(quantity("500m")).isInteger()', False),  # {2000, -3}
        ('quantity("1.5").add(quantity("500m")) == quantity("2")', True),
        ('quantity("1k").add(1).isInteger()', True),  # {1001, 0}
        ('quantity("1.5Gi").sub(quantity("512Mi")).isInteger()', False),  # an inf.Dec stays one
        ('quantity("9e18").add(quantity("9e18")).isInteger()', False),  # {18, 18}: overflows
        # exact comparisons, no cap on decimal values
        ('quantity("2e19").isGreaterThan(quantity("1e19"))', True),
        ('quantity("1e20") == quantity("1e19")', False),
        ('quantity("1e20").compareTo(quantity("100E")) == 0', True),
        ('quantity("16Ei") == quantity("8Ei")', True),  # binary: both capped
        # == compares values, however they are held
        ('quantity("2.0") == quantity("2")', True),
        ('quantity("2.0") != quantity("2")', False),
        ('quantity("1.5Gi") == quantity("1536Mi")', True),
        ('[1, 2].exists(x, quantity("1.5Gi").add(x) == quantity("1610612737"))', True),
        ('cel.bind(q, quantity("2.0"), q == quantity("2000m") && !q.isInteger())', True),
        # asApproximateFloat: float64(unscaled) * math.Pow10(exponent), as Go computes it
        ('quantity("1e20").asApproximateFloat() == 1e20', True),
        ('quantity("8Ei").asApproximateFloat() == 9223372036854775807.0', True),
        ('quantity("0.1").asApproximateFloat() == 0.1', True),
        ('quantity("1.5Gi").asApproximateFloat() == 1610612736.0', True),
    ],
)
def test_quantities_answer_as_kubernetes_holds_them(expression, expected):
    selector = compile_selector(expression)
    assert selector.error is None, selector.error
    assert selector.matches(NOTHING) is expected


def test_as_integer_of_a_value_held_as_a_decimal_is_an_error():
    selector = compile_selector('quantity("1Ei").asInteger() > 0')
    with pytest.raises(Exception, match="cannot convert value to integer"):
        selector.matches(NOTHING)


def test_device_capacity_is_held_as_the_api_server_serves_it():
    # The API server serves canonical strings; "100Ti" is too long for the binary fast path.
    gpu = device_input(
        Device(
            name="gpu-0",
            attributes={},
            capacity={
                "memory": DeviceCapacity(parse_quantity("80Gi"), None),
                "scratch": DeviceCapacity(parse_quantity("100Ti"), None),
            },
        ),
        "gpu.example.com",
        False,
    )
    capacity = 'device.capacity["gpu.example.com"]'
    for expression, expected in [
        (f"{capacity}.memory.isInteger()", True),
        (f'{capacity}.memory == quantity("81920Mi")', True),
        (f"{capacity}.scratch.isInteger()", False),
        (f'{capacity}.scratch == quantity("102400Gi")', True),
        (f'{capacity}.scratch != quantity("102400Gi")', False),
    ]:
        assert compile_selector(expression).matches(gpu) is expected, expression


def test_sums_follow_int64_amount_add_against_a_reference(seed=2612):
    """Random sums of short decimals: held as int64Amount at the smaller scale while the
    aligned values fit in int64, else as inf.Dec; the value is always exact."""
    rng = random.Random(seed)
    for _ in range(300):
        suffixes = ["", "m", "k", "M", "G", "e15"]
        texts = [
            f"{rng.randint(0, 10 ** rng.randint(1, 12))}{rng.choice(suffixes)}" for _ in range(2)
        ]
        left, right = (parse_quantity(text) for text in texts)
        total = left.add(right)
        assert total.value == left.value + right.value
        a, b = left.held, right.held
        exponent = min(a.exponent, b.exponent)
        aligned = [s.unscaled * 10 ** (s.exponent - exponent) for s in (a, b)]
        fits = all(abs(v) < 2**63 for v in (*aligned, sum(aligned)))
        if a.unscaled == 0 or b.unscaled == 0:
            assert total.held in (a, b)
        elif fits:
            assert total.held == Stored(sum(aligned), exponent, False), texts
        else:
            assert total.held.decimal, texts
