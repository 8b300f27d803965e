"""Label selectors: parsing, matching, canonical form.

Upstream: k8s.io/apimachinery/pkg/labels (selector.go: `Parse`, `Requirement`, `SelectorFromSet`),
pkg/selection (the operators), and `metav1.LabelSelectorAsSelector` (pkg/apis/meta/v1/helpers.go).

The parser is a port of upstream's lexer and recursive-descent parser, so the same strings are accepted,
the same are refused, and refusals say the same thing ("found 'b', expected: in, notin, =, ==, !=, gt, lt"),
except that an invalid key is reported at field `key` where upstream prints `<nil>`.
Notable upstream rules kept:

* `in` and `notin` are keywords only where an operator is expected: `in=notin` is key `in`, value `notin`.
* `x=` and `x in ()` select the empty value; `(a,,b)` adds the empty value to the set.
* A selector's requirements are sorted by key, which makes its string form canonical
  (`Parse("b=1,a=2")` prints `a=2,b=1`). We sort stably, so requirements on the same key keep their
  written order; upstream's sort is unstable there and leaves that order unspecified.
* Set values print sorted. We also store them sorted and de-duplicated (upstream stores matchExpressions
  values as written), so equal selectors compare equal; matching cannot tell the difference.
* There are two selectors with no requirements. `EVERYTHING` (`empty` is true) matches every label set;
  `NOTHING` matches none. A nil metav1.LabelSelector means NOTHING, `{}` means EVERYTHING.
* `selector_from_set({})` is EVERYTHING, exactly as upstream `SelectorFromSet`. Workload and Service
  controllers must special-case an empty `spec.selector` (a Service without one selects no pods) before
  calling it; this module does not guess which meaning the caller wants.

Every invalid input raises `SelectorError`, a ValueError the API server answers with 400 Bad Request.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from control.apimachinery.validation import (
    FieldError,
    aggregate_message,
    is_qualified_name,
    is_valid_label_value,
)


class SelectorError(ValueError):
    """A label or field selector that cannot be parsed or is not valid (the API server answers 400)."""


class Operator(enum.Enum):
    """Upstream selection.Operator; the value is upstream's string."""

    DOES_NOT_EXIST = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    IN = "in"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    EXISTS = "exists"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_SET_OPERATORS = frozenset({Operator.IN, Operator.NOT_IN})
_EXACT_OPERATORS = frozenset({Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS})
_UNARY_OPERATORS = frozenset({Operator.EXISTS, Operator.DOES_NOT_EXIST})
_NUMERIC_OPERATORS = frozenset({Operator.GREATER_THAN, Operator.LESS_THAN})
_INT64 = re.compile("[+-]?[0-9]+")


def _parse_int64(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64): no spaces, underscores or non-ASCII digits, int64 range."""
    if not _INT64.fullmatch(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One `key op values` term; constructing one validates it, as upstream NewRequirement does."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        errors = _requirement_errors(self.key, self.operator, tuple(self.values))
        if errors:
            raise SelectorError(aggregate_message(errors))
        object.__setattr__(self, "values", tuple(sorted(set(self.values))))

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        match self.operator:
            case Operator.IN | Operator.EQUALS | Operator.DOUBLE_EQUALS:
                return present and labels[self.key] in self.values
            case Operator.NOT_IN | Operator.NOT_EQUALS:
                return not present or labels[self.key] not in self.values
            case Operator.EXISTS:
                return present
            case Operator.DOES_NOT_EXIST:
                return not present
            case Operator.GREATER_THAN | Operator.LESS_THAN:
                actual = _parse_int64(labels[self.key]) if present else None
                if actual is None:
                    return False  # absent or not an integer: neither greater nor less
                bound = _parse_int64(self.values[0])
                assert bound is not None  # guaranteed by __post_init__
                return actual > bound if self.operator is Operator.GREATER_THAN else actual < bound

    def __str__(self) -> str:
        if self.operator is Operator.EXISTS:
            return self.key
        if self.operator is Operator.DOES_NOT_EXIST:
            return "!" + self.key
        values = ",".join(self.values)
        if self.operator in _SET_OPERATORS:
            return f"{self.key} {self.operator.value} ({values})"
        symbol = {Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<"}.get(self.operator, self.operator.value)
        return f"{self.key}{symbol}{values}"


def _requirement_errors(key: str, operator: object, values: tuple[str, ...]) -> list[FieldError]:
    """Upstream NewRequirement's checks, with its field paths (`key`, `values`, `values[0][key]`)."""
    errors = []
    if key_errors := is_qualified_name(key):
        errors.append(FieldError.invalid("key", key, "; ".join(key_errors)))
    count_problem = ""
    if operator in _SET_OPERATORS and not values:
        count_problem = "for 'in', 'notin' operators, values set can't be empty"
    elif operator in _EXACT_OPERATORS and len(values) != 1:
        count_problem = "exact-match compatibility requires one single value"
    elif operator in _UNARY_OPERATORS and values:
        count_problem = "values set must be empty for exists and does not exist"
    elif operator in _NUMERIC_OPERATORS and len(values) != 1:
        count_problem = "for 'Gt', 'Lt' operators, exactly one value is required"
    if count_problem:
        errors.append(FieldError.invalid("values", list(values), count_problem))
    if operator in _NUMERIC_OPERATORS:
        detail = "for 'Gt', 'Lt' operators, the value must be an integer"
        errors.extend(
            FieldError.invalid(f"values[{i}]", value, detail)
            for i, value in enumerate(values)
            if _parse_int64(value) is None
        )
    if not isinstance(operator, Operator):
        errors.append(FieldError.not_supported("operator", operator, [op.value for op in Operator]))
    for i, value in enumerate(values):
        if value_errors := is_valid_label_value(value):
            errors.append(FieldError.invalid(f"values[{i}][{key}]", value, "; ".join(value_errors)))
    return errors


@dataclass(frozen=True, slots=True)
class Selector:
    """The AND of its requirements, sorted by key. Build with `parse_selector` or the `selector_from_*`."""

    requirements: tuple[Requirement, ...] = ()
    _nothing: bool = False  # only NOTHING sets it

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything (EVERYTHING); NOTHING is not empty."""
        return not self.requirements and not self._nothing

    def matches(self, labels: Mapping[str, str]) -> bool:
        return not self._nothing and all(requirement.matches(labels) for requirement in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)

    def __repr__(self) -> str:
        return "labels.NOTHING" if self._nothing else f"labels.Selector({str(self)!r})"


EVERYTHING = Selector()
NOTHING = Selector(_nothing=True)


def _sorted_selector(requirements: Iterable[Requirement]) -> Selector:
    return Selector(tuple(sorted(requirements, key=lambda requirement: requirement.key)))


class _Token(enum.Enum):
    END = enum.auto()
    IDENTIFIER = enum.auto()
    OPEN_PAREN = enum.auto()
    CLOSE_PAREN = enum.auto()
    COMMA = enum.auto()
    DOES_NOT_EXIST = enum.auto()  # "!"
    EQUALS = enum.auto()
    DOUBLE_EQUALS = enum.auto()
    NOT_EQUALS = enum.auto()
    GREATER_THAN = enum.auto()
    LESS_THAN = enum.auto()
    IN = enum.auto()
    NOT_IN = enum.auto()


_LITERALS = {
    "(": _Token.OPEN_PAREN,
    ")": _Token.CLOSE_PAREN,
    ",": _Token.COMMA,
    "!": _Token.DOES_NOT_EXIST,
    "=": _Token.EQUALS,
    "==": _Token.DOUBLE_EQUALS,
    "!=": _Token.NOT_EQUALS,
    ">": _Token.GREATER_THAN,
    "<": _Token.LESS_THAN,
    "in": _Token.IN,
    "notin": _Token.NOT_IN,
}
_WHITESPACE = frozenset(" \t\r\n")
_SPECIAL = frozenset("=!(),><")
_BINARY_OPERATORS = {
    _Token.IN: Operator.IN,
    _Token.NOT_IN: Operator.NOT_IN,
    _Token.EQUALS: Operator.EQUALS,
    _Token.DOUBLE_EQUALS: Operator.DOUBLE_EQUALS,
    _Token.NOT_EQUALS: Operator.NOT_EQUALS,
    _Token.GREATER_THAN: Operator.GREATER_THAN,
    _Token.LESS_THAN: Operator.LESS_THAN,
}
_BINARY_NAMES = ", ".join(operator.value for operator in _BINARY_OPERATORS.values())


def _lex(text: str) -> list[tuple[_Token, str]]:
    """Upstream's Lexer: special symbols take the longest literal ("!=" over "!"), the rest are words."""
    tokens = []
    pos = 0
    while True:
        while pos < len(text) and text[pos] in _WHITESPACE:
            pos += 1
        if pos == len(text):
            tokens.append((_Token.END, ""))
            return tokens
        start = pos
        if text[pos] in _SPECIAL:
            pos += 2 if text[pos : pos + 2] in ("==", "!=") else 1
        else:
            while pos < len(text) and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
                pos += 1
        word = text[start:pos]
        tokens.append((_LITERALS.get(word, _Token.IDENTIFIER), word))


class _Parser:
    """Upstream's Parser. Where values are expected ("values context") `in`/`notin` are plain words."""

    def __init__(self, text: str) -> None:
        self._tokens = _lex(text)
        self._position = 0

    def _lookahead(self, *, values: bool = True) -> tuple[_Token, str]:
        token, literal = self._tokens[self._position]
        if values and token in (_Token.IN, _Token.NOT_IN):
            token = _Token.IDENTIFIER
        return token, literal

    def _consume(self, *, values: bool = True) -> tuple[_Token, str]:
        item = self._lookahead(values=values)
        self._position += 1
        return item

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            token, literal = self._lookahead()
            if token is _Token.END:
                return requirements
            if token not in (_Token.IDENTIFIER, _Token.DOES_NOT_EXIST):
                raise SelectorError(f"found '{literal}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self._requirement())
            except SelectorError as error:
                raise SelectorError(f"unable to parse requirement: {error}") from None
            token, literal = self._consume()
            if token is _Token.END:
                return requirements
            if token is not _Token.COMMA:
                raise SelectorError(f"found '{literal}', expected: ',' or 'end of string'")
            token, literal = self._lookahead()
            if token not in (_Token.IDENTIFIER, _Token.DOES_NOT_EXIST):
                raise SelectorError(f"found '{literal}', expected: identifier after ','")

    def _requirement(self) -> Requirement:
        token, key = self._consume()
        negated = token is _Token.DOES_NOT_EXIST
        if negated:
            token, key = self._consume()
        if token is not _Token.IDENTIFIER:
            raise SelectorError(f"found '{key}', expected: identifier")
        if key_errors := is_qualified_name(key):
            raise SelectorError(FieldError.invalid("key", key, "; ".join(key_errors)).message)
        if negated or self._lookahead()[0] in (_Token.END, _Token.COMMA):
            # "!x" with an operator after it ("!x=a") fails later, at the ',' or end-of-string check.
            return Requirement(key, Operator.DOES_NOT_EXIST if negated else Operator.EXISTS)
        token, literal = self._consume(values=False)
        operator = _BINARY_OPERATORS.get(token)
        if operator is None:
            raise SelectorError(f"found '{literal}', expected: {_BINARY_NAMES}")
        values = self._set_values() if operator in _SET_OPERATORS else self._exact_value()
        return Requirement(key, operator, tuple(values))

    def _set_values(self) -> set[str]:
        token, literal = self._consume()
        if token is not _Token.OPEN_PAREN:
            raise SelectorError(f"found '{literal}' expected: '('")
        token, literal = self._lookahead()
        if token is _Token.CLOSE_PAREN:  # "()" is the set holding the empty value
            self._consume()
            return {""}
        if token not in (_Token.IDENTIFIER, _Token.COMMA):
            raise SelectorError(f"found '{literal}', expected: ',', ')' or identifier")
        values = self._identifiers()
        self._consume()  # the ')' that ended the list
        return values

    def _identifiers(self) -> set[str]:
        """A comma-separated list in which every missing item is the empty value: `(,a)`, `(a,,b)`, `(a,)`."""
        values: set[str] = set()
        while True:
            token, literal = self._consume()
            if token is _Token.IDENTIFIER:
                values.add(literal)
                following, text = self._lookahead()
                if following is _Token.CLOSE_PAREN:
                    return values
                if following is not _Token.COMMA:
                    raise SelectorError(f"found '{text}', expected: ',' or ')'")
            elif token is _Token.COMMA:
                if not values:
                    values.add("")
                following, _ = self._lookahead()
                if following is _Token.CLOSE_PAREN:
                    values.add("")
                    return values
                if following is _Token.COMMA:
                    self._consume()
                    values.add("")
            else:
                raise SelectorError(f"found '{literal}', expected: ',', or identifier")

    def _exact_value(self) -> set[str]:
        if self._lookahead()[0] in (_Token.END, _Token.COMMA):
            return {""}
        token, literal = self._consume()
        if token is not _Token.IDENTIFIER:
            raise SelectorError(f"found '{literal}', expected: identifier")
        return {literal}


def parse_selector(text: str) -> Selector:
    """Parse a `labelSelector` query string, e.g. `app=web,tier in (front,back),!canary`; "" selects all."""
    return _sorted_selector(_Parser(text).parse())


def selector_from_set(labels: Mapping[str, str] | None) -> Selector:
    """Equality on every pair (upstream ValidatedSelectorFromSet); None or {} give EVERYTHING."""
    pairs = (labels or {}).items()
    return _sorted_selector(Requirement(key, Operator.EQUALS, (value,)) for key, value in pairs)


_LABEL_SELECTOR_OPERATORS = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


def selector_from_label_selector(obj: Mapping[str, Any] | None) -> Selector:
    """A metav1.LabelSelector wire dict (`matchLabels`, `matchExpressions`).

    None gives NOTHING and {} gives EVERYTHING, as upstream LabelSelectorAsSelector.
    """
    if obj is None:
        return NOTHING
    match_labels = (obj.get("matchLabels") or {}).items()
    requirements = [Requirement(key, Operator.EQUALS, (value,)) for key, value in match_labels]
    for expression in obj.get("matchExpressions") or ():
        operator = _LABEL_SELECTOR_OPERATORS.get(expression.get("operator"))
        if operator is None:
            raise SelectorError(f'"{expression.get("operator")}" is not a valid label selector operator')
        values = tuple(expression.get("values") or ())
        requirements.append(Requirement(expression.get("key", ""), operator, values))
    return _sorted_selector(requirements)
