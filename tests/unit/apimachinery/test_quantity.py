"""control.apimachinery.quantity against upstream's quantity_test.go tables."""

from __future__ import annotations

import copy
import pickle
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from control.apimachinery.quantity import (
    Quantity,
    QuantityError,
    QuantityFormat,
    add_resource_lists,
    cpu_to_millicores,
    to_bytes,
)

BINARY = QuantityFormat.BINARY_SI
DECIMAL = QuantityFormat.DECIMAL_SI
EXPONENT = QuantityFormat.DECIMAL_EXPONENT
MAX_INT64 = 2**63 - 1


def dec(mantissa: int, exponent: int) -> Fraction:
    """upstream's decQuantity(mantissa, exponent, ...) value."""
    return Fraction(mantissa) * Fraction(10) ** exponent


# Upstream TestQuantityParse: input, value, format.
PARSE_TABLE = [
    ("0", dec(0, 0), DECIMAL),
    ("0n", dec(0, 0), DECIMAL),
    ("0m", dec(0, 0), DECIMAL),
    ("0Ki", dec(0, 0), BINARY),
    ("0M", dec(0, 0), DECIMAL),
    ("0Ti", dec(0, 0), BINARY),
    ("1", dec(1, 0), DECIMAL),
    ("1Ki", dec(1024, 0), BINARY),
    ("8Ki", dec(8 * 1024, 0), BINARY),
    ("7Mi", dec(7 * 2**20, 0), BINARY),
    ("6Gi", dec(6 * 2**30, 0), BINARY),
    ("5Ti", dec(5 * 2**40, 0), BINARY),
    ("4Pi", dec(4 * 2**50, 0), BINARY),
    ("3Ei", dec(3 * 2**60, 0), BINARY),
    ("100Ti", dec(100 * 2**40, 0), BINARY),
    ("5n", dec(5, -9), DECIMAL),
    ("4u", dec(4, -6), DECIMAL),
    ("3m", dec(3, -3), DECIMAL),
    ("9", dec(9, 0), DECIMAL),
    ("8k", dec(8, 3), DECIMAL),
    ("50k", dec(5, 4), DECIMAL),
    ("7M", dec(7, 6), DECIMAL),
    ("6G", dec(6, 9), DECIMAL),
    ("5T", dec(5, 12), DECIMAL),
    ("40T", dec(4, 13), DECIMAL),
    ("2P", dec(2, 15), DECIMAL),
    ("1E", dec(1, 18), DECIMAL),
    ("1E-3", dec(1, -3), EXPONENT),
    ("1e3", dec(1, 3), EXPONENT),
    ("1E6", dec(1, 6), EXPONENT),
    ("1e9", dec(1, 9), EXPONENT),
    ("1E18", dec(1, 18), EXPONENT),
    ("1e14", dec(1, 14), EXPONENT),
    ("100.035k", dec(100035, 0), DECIMAL),
    ("0.001", dec(1, -3), DECIMAL),
    ("0.0005k", dec(5, -1), DECIMAL),
    ("0.5", dec(5, -1), DECIMAL),
    ("0.00050k", dec(5, -1), DECIMAL),
    ("0.50000", dec(5, -1), DECIMAL),
    ("0.5e0", dec(5, -1), EXPONENT),
    ("0.5e-1", dec(5, -2), EXPONENT),
    ("10.035M", dec(10035, 3), DECIMAL),
    ("1.2e3", dec(12, 2), EXPONENT),
    ("1.3E+6", dec(13, 5), EXPONENT),
    ("1.40e9", dec(14, 8), EXPONENT),
    ("1.53E12", dec(153, 10), EXPONENT),
    ("9.01", dec(901, -2), DECIMAL),
    ("8.1k", dec(81, 2), DECIMAL),
    ("7.123456M", dec(7123456, 0), DECIMAL),
    ("6.987654321G", dec(6987654321, 0), DECIMAL),
    ("1.01E", dec(101, 16), DECIMAL),
    # things that saturate or round
    ("3.001n", dec(4, -9), DECIMAL),
    ("1.1E-9", dec(2, -9), EXPONENT),
    ("0.0000000001", dec(1, -9), DECIMAL),
    ("0.0000000005", dec(1, -9), DECIMAL),
    ("0.5e-9", dec(1, -9), EXPONENT),
    ("0.9n", dec(1, -9), DECIMAL),
    ("0.00000012345", dec(124, -9), DECIMAL),
    ("0.00000012354", dec(124, -9), DECIMAL),
    ("9Ei", Fraction(MAX_INT64), BINARY),
    ("9223372036854775807Ki", Fraction(MAX_INT64), BINARY),
    ("12E", dec(12, 18), DECIMAL),
    # fractional binary
    ("100.035Ki", dec(10243584, -2), BINARY),
    ("0.5Mi", dec(2**19, 0), BINARY),
    ("0.05Gi", dec(536870912, -1), BINARY),
    ("0.025Ti", dec(274877906944, -1), BINARY),
    # written by trolls
    ("0.000000000001Ki", dec(2, -9), DECIMAL),
    (".001", dec(1, -3), DECIMAL),
    (".0001k", dec(100, -3), DECIMAL),
    ("1.", dec(1, 0), DECIMAL),
    ("1.G", dec(1, 9), DECIMAL),
]


@pytest.mark.parametrize(("text", "value", "fmt"), PARSE_TABLE, ids=[row[0] for row in PARSE_TABLE])
def test_parse(text: str, value: Fraction, fmt: QuantityFormat) -> None:
    quantity = Quantity(text)
    assert quantity.as_fraction() == value
    assert quantity.format is fmt


@pytest.mark.parametrize(("text", "value", "fmt"), PARSE_TABLE, ids=[row[0] for row in PARSE_TABLE])
def test_parse_with_signs(text: str, value: Fraction, fmt: QuantityFormat) -> None:
    assert Quantity("-" + text).as_fraction() == -value
    assert Quantity("-" + text).format is fmt
    assert Quantity("+" + text) == Quantity(text)


@pytest.mark.parametrize("text", [".", "-.", "+", "-", "-0", "000", "0.", "0.0Ki"])
def test_upstream_scanner_reads_a_missing_number_as_zero(text: str) -> None:
    assert Quantity(text) == Quantity("0")
    assert str(Quantity(text)) == "0"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "quantities must match the regular expression"),
        ("1.1.M", "quantities must match the regular expression"),
        ("1.5.5", "quantities must match the regular expression"),
        ("1+1.0M", "quantities must match the regular expression"),
        ("0.1am", "quantities must match the regular expression"),
        ("aoeu", "quantities must match the regular expression"),
        ("abc", "quantities must match the regular expression"),
        ("Non-Numeric", "quantities must match the regular expression"),
        ("1Gib", "quantities must match the regular expression"),
        (" 1", "quantities must match the regular expression"),
        ("1 ", "quantities must match the regular expression"),
        ("1\n", "quantities must match the regular expression"),
        ("0.1mi", "unable to parse quantity's suffix"),
        (".5i", "unable to parse quantity's suffix"),
        ("1i", "unable to parse quantity's suffix"),
        ("-3.01i", "unable to parse quantity's suffix"),
        ("-3.01e-", "unable to parse quantity's suffix"),
        ("1K", "unable to parse quantity's suffix"),
        ("1e", "unable to parse quantity's suffix"),
        ("1e999999999", "too large an exponent"),
        ("1" * 1001, "too many digits"),
    ],
)
def test_parse_refuses(text: str, error: str) -> None:
    with pytest.raises(QuantityError) as raised:
        Quantity(text)
    assert error in str(raised.value)
    assert isinstance(raised.value, ValueError)


# Upstream TestQuantityString and TestQuantityParseEmit: a value's canonical form, and another spelling of it.
@pytest.mark.parametrize(
    ("canonical", "alternate"),
    [
        ("1Gi", "1024Mi"),
        ("300Mi", "307200Ki"),
        ("1001Gi", "1025024Mi"),
        ("1Ti", "1024Gi"),
        ("1G", "1000M"),
        ("1G", "0.001T"),
        ("1m", "1000u"),
        ("1080m", "1.08"),
        ("1080m", "1080000000n"),
        ("1e21", "1000E"),
        ("5e21", "5000E"),
        ("1e24", "1000000E"),
        ("1e9", ".001e12"),
        ("1e-3", "0.001e0"),
        ("1e-9", "1000e-12"),
        ("0", "00"),
        ("1024m", ".001Ki"),
        ("1024u", ".000001Ki"),
        ("1024n", ".000000001Ki"),
        ("2n", ".000000000001Ki"),
        ("1k", "1000"),
        ("1", "1000m"),
        ("500m", "0.5"),
        ("1536Mi", "1.5Gi"),
        ("1", "+1"),
        ("1k", "+1k"),
        ("1", "01"),
        ("1300e3", "1.3E+6"),
    ],
)
def test_canonical_form(canonical: str, alternate: str) -> None:
    assert str(Quantity(alternate)) == canonical
    assert str(Quantity(canonical)) == canonical
    if canonical != "0":
        assert str(-Quantity(alternate)) == "-" + canonical


@pytest.mark.parametrize(
    "canonical",
    ["6Ki", "3k", "1025", "80m", "300M", "1T", "1234567M", "1E", "1n", "80n", "80u", "80e-3", "300e6", "3e3",
     "1e12", "129e6", "100m", "123Mi", "128974848", "1023Ki", "2048"],
)
def test_canonical_strings_print_as_themselves(canonical: str) -> None:
    assert str(Quantity(canonical)) == canonical


@pytest.mark.parametrize(
    ("quantity", "text"),
    [
        pytest.param(Quantity.from_int(5, BINARY), "5", id="small-binary-prints-decimal"),
        pytest.param(Quantity.from_milli(500, BINARY), "500m", id="fractional-binary-prints-decimal"),
        pytest.param(Quantity.from_int(1025, BINARY), "1025", id="binary-without-factor"),
        pytest.param(Quantity.from_int(-1024, BINARY), "-1Ki", id="negative-binary"),
        pytest.param(Quantity.from_int(2**63, BINARY), "8Ei", id="binary-beyond-int64"),
        pytest.param(Quantity.from_int(2**70, BINARY), "1024Ei", id="binary-beyond-exbi"),
        pytest.param(Quantity.from_int(1000), "1k", id="new-quantity"),
        pytest.param(Quantity.from_int(1234000), "1234k", id="new-quantity-kilo"),
        pytest.param(Quantity.from_int(1024, BINARY), "1Ki", id="new-binary"),
        pytest.param(Quantity.from_int(1000000, EXPONENT), "1e6", id="new-exponent"),
        pytest.param(Quantity.from_milli(1), "1m", id="milli"),
        pytest.param(Quantity.from_milli(1000), "1", id="milli-whole"),
        pytest.param(Quantity.from_milli(1024, BINARY), "1024m", id="milli-binary"),
        pytest.param(Quantity.from_milli(1024 * 1024, BINARY), "1048576m", id="milli-binary-large"),
        pytest.param(Quantity.from_milli(1000000, EXPONENT), "1e3", id="milli-exponent"),
    ],
)
def test_constructed_quantities_print_canonically(quantity: Quantity, text: str) -> None:
    assert str(quantity) == text


@pytest.mark.parametrize(
    ("x", "y", "expected"),
    [("0", "0", 0), ("100m", "50m", 1), ("50m", "100m", -1), ("10000T", "100Gi", 1), ("1Gi", "1073741824", 0)],
)
def test_comparison_is_by_value(x: str, y: str, expected: int) -> None:
    a, b = Quantity(x), Quantity(y)
    assert (a > b, a == b, a < b) == (expected > 0, expected == 0, expected < 0)
    assert (a >= b, a <= b, a != b) == (expected >= 0, expected <= 0, expected != 0)


def test_equal_quantities_hash_equal() -> None:
    assert hash(Quantity("1Gi")) == hash(Quantity("1073741824")) == hash(Quantity("1024Mi"))
    assert len({Quantity("1k"), Quantity("1000"), Quantity("1e3")}) == 1
    assert Quantity("1") != 1


@pytest.mark.parametrize(
    ("a", "b", "total", "difference"),
    [
        pytest.param("10", "1e1", "20", "0", id="decimal-plus-exponent"),
        pytest.param("10", "1Ki", "1034", "-1014", id="keeps-left-format"),
        pytest.param("2Ki", "1", "2049", "2047", id="binary-left"),
        pytest.param("0", "100m", "100m", "-100m", id="zero-takes-right-format"),
        pytest.param("0", "1Gi", "1Gi", "-1Gi", id="zero-takes-right-binary"),
        pytest.param("100m", "0", "100m", "100m", id="plus-zero"),
        pytest.param("1Gi", "0", "1Gi", "1Gi", id="binary-plus-zero"),
        pytest.param("1.5", "0.5", "2", "1", id="fractions"),
    ],
)
def test_add_and_sub(a: str, b: str, total: str, difference: str) -> None:
    assert str(Quantity(a) + Quantity(b)) == total
    assert str(Quantity(a) - Quantity(b)) == difference


@pytest.mark.parametrize(
    ("quantity", "factor", "product"),
    [("10", 10, "100"), ("10", 1, "10"), ("0", 50, "0"), ("50", 0, "0"), ("-10", -10, "100"), ("1Gi", 3, "3Gi"),
     ("100m", 3, "300m"), (str(MAX_INT64), 2, str(2 * MAX_INT64))],
)
def test_multiply_by_int(quantity: str, factor: int, product: str) -> None:
    assert str(Quantity(quantity) * factor) == product
    assert factor * Quantity(quantity) == Quantity(quantity) * factor


def test_arithmetic_refuses_other_types() -> None:
    with pytest.raises(TypeError):
        Quantity("1") + 1  # type: ignore[operator]
    with pytest.raises(TypeError):
        Quantity("1") * 0.5  # type: ignore[operator]
    with pytest.raises(TypeError):
        Quantity("1") * Quantity("2")  # type: ignore[operator]
    with pytest.raises(TypeError):
        _ = Quantity("1") < 2  # type: ignore[operator]


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("1", 1, 1000),
        ("1Ki", 1024, 1024000),
        ("100m", 1, 100),
        ("1500m", 2, 1500),
        ("1n", 1, 1),
        ("1001u", 1, 2),
        ("0.5", 1, 500),
        ("0", 0, 0),
        ("-1500m", -2, -1500),
        ("-1n", -1, -1),
        ("1.5Gi", 1610612736, 1610612736000),
        ("1e21", 10**21, 10**24),
    ],
)
def test_value_and_milli_value_round_away_from_zero(text: str, value: int, milli: int) -> None:
    assert Quantity(text).value() == value
    assert Quantity(text).milli_value() == milli


def test_constructor_inputs() -> None:
    assert Quantity(5) == Quantity("5") and Quantity(5).format is DECIMAL
    assert Quantity(Decimal("0.5")) == Quantity("500m")
    assert str(Quantity(Decimal("1E+3"))) == "1e3"
    assert Quantity.parse("1Mi") == Quantity("1048576")
    for bad in (0.5, True, None, b"1"):
        with pytest.raises(TypeError):
            Quantity(bad)  # type: ignore[arg-type]


def test_quantity_is_an_immutable_value() -> None:
    quantity = Quantity("1Gi")
    with pytest.raises(AttributeError):
        quantity.format = DECIMAL  # type: ignore[misc]
    assert copy.deepcopy(quantity) == quantity and str(copy.deepcopy(quantity)) == "1Gi"
    assert pickle.loads(pickle.dumps(quantity)) == quantity
    assert repr(quantity) == "Quantity('1Gi')"


@pytest.mark.parametrize(
    ("cpu", "millicores"), [("100m", 100), ("1", 1000), ("2.5", 2500), ("1n", 1), ("0", 0), (3, 3000)]
)
def test_cpu_to_millicores(cpu: str | int, millicores: int) -> None:
    assert cpu_to_millicores(cpu) == millicores
    assert cpu_to_millicores(Quantity(cpu)) == millicores


@pytest.mark.parametrize(
    ("memory", "size"), [("128974848", 128974848), ("129e6", 129000000), ("129M", 129000000),
                         ("123Mi", 128974848), ("1.5Gi", 1610612736), ("0.5", 1), ("1k", 1000)],
)
def test_to_bytes(memory: str, size: int) -> None:
    assert to_bytes(memory) == size


def test_add_resource_lists() -> None:
    total = add_resource_lists(
        {"cpu": "100m", "memory": "64Mi"},
        {"cpu": Quantity("1"), "pods": 1},
        {},
        {"memory": "64Mi", "nvidia.com/gpu": "2"},
    )
    assert {name: str(quantity) for name, quantity in total.items()} == {
        "cpu": "1100m",
        "memory": "128Mi",
        "pods": "1",
        "nvidia.com/gpu": "2",
    }
    assert add_resource_lists() == {}


_SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e-12", "e3", "E9"]
_TEXTS = st.builds(
    lambda sign, whole, fraction, suffix: f"{sign}{whole}{fraction}{suffix}",
    st.sampled_from(["", "-", "+"]),
    st.integers(0, 10**20).map(str),
    st.one_of(st.just(""), st.integers(0, 10**6).map(lambda digits: f".{digits}")),
    st.sampled_from(_SUFFIXES),
)


@given(_TEXTS)
def test_canonical_string_round_trips(text: str) -> None:
    quantity = Quantity(text)
    reparsed = Quantity(str(quantity))
    assert reparsed == quantity
    assert str(reparsed) == str(quantity)


@given(_TEXTS, _TEXTS)
def test_addition_is_exact(a: str, b: str) -> None:
    x, y = Quantity(a), Quantity(b)
    assert (x + y).as_fraction() == x.as_fraction() + y.as_fraction()
    assert (x + y) - y == x
    assert x + y == y + x


@given(_TEXTS)
def test_values_are_whole_nanos_and_integer_views_round_away_from_zero(text: str) -> None:
    quantity = Quantity(text)
    exact = quantity.as_fraction()
    assert (exact * 10**9).denominator == 1
    for rounded, scaled in ((quantity.value(), exact), (quantity.milli_value(), exact * 1000)):
        assert 0 <= abs(rounded) - abs(scaled) < 1
        assert rounded * scaled >= 0  # same sign
