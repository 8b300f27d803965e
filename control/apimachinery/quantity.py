"""Resource quantities: `100m` CPU, `1.5Gi` memory, exact arithmetic, canonical strings.

Upstream: k8s.io/apimachinery/pkg/api/resource (quantity.go, suffix.go, amount.go). The scanner is a port
of upstream's `parseQuantityString`, so the same strings parse (including upstream oddities such as "1.",
".", "+" and "-", the last three meaning zero) and the same fail, with the same messages.

A value is held as an exact `Fraction`; no float is ever involved. Upstream's rules, all kept:

* Parsing rounds a value finer than a nano up, away from zero, to the next nano ("0.9n" is "1n"): asking
  for a sliver of a resource gets you the smallest unit rather than nothing.
* A BinarySI value is capped at 2^63-1 ("9Ei" parses as 9223372036854775807), and a BinarySI value
  strictly between 0 and 1 becomes DecimalSI ("0.000000000001Ki" is "2n"). DecimalSI is not capped.
* Every quantity remembers its format (DecimalSI `1k`, BinarySI `1Ki`, DecimalExponent `1e3`) and prints
  in it, canonically: no fractional digits, the largest exponent that loses nothing, and the exponent a
  multiple of three (1024 for BinarySI): "1.5" is "1500m", "1.5Gi" is "1536Mi", "1000" is "1k",
  "1024Mi" is "1Gi", "129e6" stays "129e6", "0.5" is "500m". BinarySI values below 1024 in magnitude,
  or not whole, print as DecimalSI ("5", "1024m"). DecimalSI beyond `E` prints with an exponent, "1e21",
  as upstream now does instead of losing the magnitude.
* Equality and order are by value alone: `Quantity("1Gi") == Quantity("1073741824")`. Sums keep the
  left operand's format unless it is zero ("0" + "1Gi" is "1Gi"); products keep it too.
* `value()` and `milli_value()` round away from zero (ceil for the non-negative values resources are),
  as upstream's int64 `Value()`/`MilliValue()`; Python ints do not overflow, so no upstream overflow.

Where we differ:

* Upstream's `String()` returns the parsed text verbatim when its fast path judges it canonical, which
  also keeps a leading "+" or leading zeros ("+1k", "01"); we always print the canonical form.
* The digits of a quantity and its decimal exponent are limited to 1000 each, so a hostile string such
  as "1e999999999" cannot make exact arithmetic exhaust the API server (upstream accepts any int32
  exponent). No resource amount comes near either limit.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction


class QuantityError(ValueError):
    """Text that is not a quantity (upstream ErrFormatWrong, ErrSuffix)."""


class QuantityFormat(enum.Enum):
    """How a quantity prints; the value is upstream's Format string."""

    DECIMAL_EXPONENT = "DecimalExponent"  # 12e6
    BINARY_SI = "BinarySI"  # 12Mi
    DECIMAL_SI = "DecimalSI"  # 12M


_FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_BAD_SUFFIX = "unable to parse quantity's suffix"
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIX_OF = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIX_OF = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")  # by power of 1024
_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_EXPONENT = re.compile("[+-]?[0-9]+")
_NANOS = 10**9
_MAX_BINARY_SI = 2**63 - 1
_LIMIT = 1000  # digits in the number, and magnitude of the decimal exponent


def _scan(text: str) -> tuple[bool, str, str, str]:
    """Split into (positive, integer digits, fraction digits, suffix) as upstream parseQuantityString."""
    end = len(text)
    positive = not text.startswith("-")
    pos = 1 if text[:1] in ("+", "-") else 0
    while pos < end and text[pos] == "0":
        pos += 1
    if pos == end:
        return positive, "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    whole = text[start:pos] or "0"
    fraction = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        fraction = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(_FORMAT_WRONG)
    return positive, whole, fraction, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, QuantityFormat]:
    """(base, exponent, format) of a suffix: "Mi" is 2^20, "M" is 10^6, "e6" is 10^6 in exponent form."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], QuantityFormat.DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], QuantityFormat.BINARY_SI
    if suffix[:1] in ("e", "E") and _EXPONENT.fullmatch(suffix[1:]):
        return 10, int(suffix[1:]), QuantityFormat.DECIMAL_EXPONENT
    raise QuantityError(_BAD_SUFFIX)


def _parse(text: str) -> tuple[Fraction, QuantityFormat]:
    if not text:
        raise QuantityError(_FORMAT_WRONG)
    positive, whole, fraction, suffix = _scan(text)
    base, exponent, fmt = _interpret(suffix)
    if len(whole) + len(fraction) > _LIMIT or abs(exponent) > _LIMIT:
        raise QuantityError(f"quantity {text!r} has too many digits or too large an exponent")
    magnitude = Fraction(int(whole + fraction), 10 ** len(fraction)) * Fraction(base) ** exponent
    magnitude = Fraction(math.ceil(magnitude * _NANOS), _NANOS)  # round up to a whole nano
    if fmt is QuantityFormat.BINARY_SI:
        magnitude = min(magnitude, Fraction(_MAX_BINARY_SI))
        if 0 < magnitude < 1:
            fmt = QuantityFormat.DECIMAL_SI
    return (magnitude if positive else -magnitude), fmt


def _decimal_parts(magnitude: Fraction) -> tuple[int, int]:
    """(mantissa, exponent) with the exponent a multiple of 3 and as large as possible without fractions."""
    mantissa, exponent = int(magnitude * _NANOS), -9  # exact: every value is a whole number of nanos
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    while exponent % 3:
        mantissa *= 10
        exponent -= 1
    return mantissa, exponent


def _canonical(value: Fraction, fmt: QuantityFormat) -> str:
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if fmt is QuantityFormat.BINARY_SI and magnitude >= 1024 and magnitude.denominator == 1:
        mantissa, power = int(magnitude), 0
        while mantissa % 1024 == 0 and power < len(_BINARY_SUFFIX_OF) - 1:
            mantissa //= 1024
            power += 1
        return f"{sign}{mantissa}{_BINARY_SUFFIX_OF[power]}"
    mantissa, exponent = _decimal_parts(magnitude)
    if fmt is not QuantityFormat.DECIMAL_EXPONENT and exponent in _DECIMAL_SUFFIX_OF:
        suffix = _DECIMAL_SUFFIX_OF[exponent]  # BinarySI that is small or fractional prints as DecimalSI
    else:
        suffix = f"e{exponent}" if exponent else ""
    return f"{sign}{mantissa}{suffix}"


def _round_away_from_zero(value: Fraction) -> int:
    return math.ceil(value) if value >= 0 else math.floor(value)


@dataclass(frozen=True, slots=True, init=False, eq=False)
class Quantity:
    """An exact amount of a resource, compared by value, printed in its own format.

    `Quantity("500m")` parses upstream's syntax (an int is parsed from its decimal text, as a JSON number
    would be). Floats are refused: 0.1 has no exact binary value, which is the point of this type; decode
    JSON with `parse_float=decimal.Decimal` and pass the Decimal, or pass the number's text.
    """

    _value: Fraction
    format: QuantityFormat

    def __init__(self, text: str | int | Decimal) -> None:
        if isinstance(text, bool) or not isinstance(text, str | int | Decimal):
            raise TypeError(f"a quantity is parsed from a str, int or Decimal, not {type(text).__name__}")
        value, fmt = _parse(text if isinstance(text, str) else str(text))
        object.__setattr__(self, "_value", value)
        object.__setattr__(self, "format", fmt)

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Upstream ParseQuantity; raises QuantityError."""
        return cls(text)

    @classmethod
    def _of(cls, value: Fraction, fmt: QuantityFormat) -> Quantity:
        quantity = object.__new__(cls)
        object.__setattr__(quantity, "_value", value)
        object.__setattr__(quantity, "format", fmt)
        return quantity

    @classmethod
    def from_int(cls, value: int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> Quantity:
        """Upstream NewQuantity: `from_int(1024, QuantityFormat.BINARY_SI)` prints "1Ki"."""
        return cls._of(Fraction(value), fmt)

    @classmethod
    def from_milli(cls, value: int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> Quantity:
        """Upstream NewMilliQuantity: `from_milli(250)` prints "250m" (a quarter of a CPU)."""
        return cls._of(Fraction(value, 1000), fmt)

    def as_fraction(self) -> Fraction:
        return self._value

    def value(self) -> int:
        """The amount in whole units, rounded away from zero: "1500m" is 2, "1Ki" is 1024."""
        return _round_away_from_zero(self._value)

    def milli_value(self) -> int:
        """The amount in thousandths, rounded away from zero: "0.5" is 500, "1n" is 1."""
        return _round_away_from_zero(self._value * 1000)

    def __str__(self) -> str:
        return _canonical(self._value, self.format)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return self._value == other._value if isinstance(other, Quantity) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._value)

    def __lt__(self, other: Quantity) -> bool:
        return self._value < other._value if isinstance(other, Quantity) else NotImplemented

    def __le__(self, other: Quantity) -> bool:
        return self._value <= other._value if isinstance(other, Quantity) else NotImplemented

    def __gt__(self, other: Quantity) -> bool:
        return self._value > other._value if isinstance(other, Quantity) else NotImplemented

    def __ge__(self, other: Quantity) -> bool:
        return self._value >= other._value if isinstance(other, Quantity) else NotImplemented

    def __add__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity._of(self._value + other._value, other.format if self._value == 0 else self.format)

    def __sub__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity._of(self._value - other._value, other.format if self._value == 0 else self.format)

    def __neg__(self) -> Quantity:
        return Quantity._of(-self._value, self.format)

    def __mul__(self, factor: int) -> Quantity:
        if not isinstance(factor, int) or isinstance(factor, bool):
            return NotImplemented
        return Quantity._of(self._value * factor, self.format)

    __rmul__ = __mul__


def _as_quantity(value: Quantity | str | int) -> Quantity:
    return value if isinstance(value, Quantity) else Quantity(value)


def cpu_to_millicores(quantity: Quantity | str | int) -> int:
    """CPU in millicores for cgroups and the scheduler, rounded up: "100m" is 100, "1n" is 1."""
    return _as_quantity(quantity).milli_value()


def to_bytes(quantity: Quantity | str | int) -> int:
    """Memory or storage in bytes, rounded up: "1.5Gi" is 1610612736, "0.5" is 1."""
    return _as_quantity(quantity).value()


def add_resource_lists(*lists: Mapping[str, Quantity | str | int]) -> dict[str, Quantity]:
    """Per-resource sums of ResourceLists (`{"cpu": "100m", "memory": "64Mi"}`), as upstream quota.Add.

    A resource missing from a list counts as zero; the result has every resource named in any list.
    """
    total: dict[str, Quantity] = {}
    for resources in lists:
        for name, amount in resources.items():
            quantity = _as_quantity(amount)
            total[name] = total[name] + quantity if name in total else quantity
    return total
