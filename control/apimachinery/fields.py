"""Field selectors, and reading selectable fields out of wire objects.

Upstream: k8s.io/apimachinery/pkg/fields (selector.go: `ParseSelector`, `EscapeValue`, `UnescapeValue`,
`hasTerm`/`notHasTerm`/`andTerm`) for the grammar and matching; the per-resource field sets upstream
builds in each registry's `GetAttrs`/`ToSelectableFields` are what `get_field`/`fields_of` stand in for.

Grammar, as upstream: comma-separated terms `field=value`, `field==value` or `field!=value`; no
whitespace trimming (`a = b` is field "a " and value " b"); the field name is taken verbatim up to the
first operator; in the value, `\\`, `,` and `=` must be escaped with a backslash, and no other escape
exists. Errors raise `SelectorError`, the very class `labels` raises, so the API server answers 400 for
both alike. A field that an object does not have reads as "", so `status.podIP=` selects pods without
an IP, and so does `status.podIP!=x`. Which fields may be selected on is each resource's business: the
API server checks `FieldSelector.requirements` against its list and answers 400 for the others.

Upstream sorts the raw terms before parsing, so its string form depends on how a term was spelled
(`a==z` sorts before `a=b`). We sort the parsed requirements by their canonical string instead, which
gives the same result for every canonically written selector and makes `parse(str(s)) == s` hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from control.apimachinery.labels import Operator, SelectorError

_TERM_OPERATORS = (("!=", Operator.NOT_EQUALS), ("==", Operator.EQUALS), ("=", Operator.EQUALS))


def escape_value(value: str) -> str:
    """Make any literal string usable as a selector value (upstream EscapeValue)."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_value(text: str) -> str:
    """Undo `escape_value`; an unknown escape, a lone trailing backslash or a bare `,`/`=` is an error."""
    result = []
    escaped = False
    for char in text:
        if escaped:
            if char not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{char}")
            result.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in ",=":
            raise SelectorError(f"invalid field selector: unescaped character in value: {char!r}")
        else:
            result.append(char)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(result)


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """`field=value` (operator EQUALS, also spelled `==`) or `field!=value` (NOT_EQUALS)."""

    field: str
    operator: Operator
    value: str

    def __post_init__(self) -> None:
        if self.operator not in (Operator.EQUALS, Operator.NOT_EQUALS):
            raise SelectorError(f"a field selector cannot use '{self.operator.value}', only '=', '==' or '!='")

    def matches(self, fields: Mapping[str, str]) -> bool:
        equal = fields.get(self.field, "") == self.value
        return equal if self.operator is Operator.EQUALS else not equal

    def __str__(self) -> str:
        return f"{self.field}{self.operator.value}{escape_value(self.value)}"


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """The AND of its requirements; no requirements (EVERYTHING) matches everything."""

    requirements: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(requirement.matches(fields) for requirement in self.requirements)

    def requires_exact_match(self, field: str) -> str | None:
        """The value `field` must equal, if the selector pins it (e.g. the kubelet's `spec.nodeName=`)."""
        for requirement in self.requirements:
            if requirement.field == field and requirement.operator is Operator.EQUALS:
                return requirement.value
        return None

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)


EVERYTHING = FieldSelector()


def _split_terms(text: str) -> list[str]:
    """Split at commas that are not escaped; the escapes stay in the terms for `unescape_value`."""
    terms = []
    start = 0
    escaped = False
    for i, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, Operator, str] | None:
    """At the first operator, trying `!=` and `==` before `=` so `a==b` does not read as value "=b"."""
    for i in range(len(term)):
        for symbol, operator in _TERM_OPERATORS:
            if term.startswith(symbol, i):
                return term[:i], operator, term[i + len(symbol) :]
    return None


def parse_selector(text: str) -> FieldSelector:
    """Parse a `fieldSelector` query string such as `spec.nodeName=node-1,status.phase!=Succeeded`."""
    requirements = []
    for term in _split_terms(text):
        if not term:
            continue  # upstream skips empty terms: "a=b," and ",a=b" are valid
        parts = _split_term(term)
        if parts is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
        field, operator, value = parts
        requirements.append(FieldRequirement(field, operator, unescape_value(value)))
    return FieldSelector(tuple(sorted(requirements, key=str)))


def get_field(obj: Mapping[str, Any], path: str, *, default: str = "") -> str:
    """The string form of the field at a dotted path such as `metadata.name` or `involvedObject.uid`.

    Strings are returned as they are, booleans as "true"/"false" and integers in decimal, as upstream
    field sets print them. Anything absent, null, or not a scalar gives `default`; pass "false" for a
    boolean such as `spec.hostNetwork` whose absence upstream reads as false.
    """
    value: Any = obj
    for name in path.split("."):
        if not isinstance(value, Mapping) or name not in value:
            return default
        value = value[name]
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return default


def fields_of(obj: Mapping[str, Any], paths: Iterable[str]) -> dict[str, str]:
    """The field set a FieldSelector matches against: `{path: get_field(obj, path)}` for each path."""
    return {path: get_field(obj, path) for path in paths}
