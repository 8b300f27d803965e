"""control.apimachinery.fields against upstream's fields/selector_test.go tables."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from control.apimachinery.fields import (
    EVERYTHING,
    FieldRequirement,
    FieldSelector,
    escape_value,
    fields_of,
    get_field,
    parse_selector,
    unescape_value,
)
from control.apimachinery.labels import Operator, SelectorError


@pytest.mark.parametrize(
    ("unescaped", "escaped"),
    [("", ""), ("a", "a"), ("=", r"\="), (",", r"\,"), ("\\", "\\\\"), (r"\=\,\ ", r"\\\=\\\,\\ ")],
)
def test_escape_round_trip(unescaped: str, escaped: str) -> None:
    assert escape_value(unescaped) == escaped
    assert unescape_value(escaped) == unescaped


@pytest.mark.parametrize(
    ("escaped", "message"),
    [
        pytest.param("\\", r"invalid escape sequence: \\$", id="orphan-backslash"),
        pytest.param("\\\\\\", r"invalid escape sequence: \\$", id="orphan-after-escaped-backslash"),
        pytest.param(r"\a", r"invalid escape sequence: \\a", id="unknown-escape"),
        pytest.param("a=b", "unescaped character in value: '='", id="bare-equals"),
        pytest.param("a,b", "unescaped character in value: ','", id="bare-comma"),
    ],
)
def test_unescape_refuses(escaped: str, message: str) -> None:
    with pytest.raises(SelectorError, match=message):
        unescape_value(escaped)


@pytest.mark.parametrize("text", ["x=a,y=b,z=c", "", "x!=a,y=b", r"x=a||y\=b", r"x=a\=\=b", "=empty-field"])
def test_good_strings_reprint_identically(text: str) -> None:
    assert str(parse_selector(text)) == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("x=a||y=b", "unescaped character in value: '='", id="bare-equals-in-value"),
        pytest.param("x==a==b", "unescaped character in value: '='", id="double-comparison"),
        pytest.param("x=a,b", "invalid selector: 'x=a,b'; can't understand 'b'", id="bare-comma-in-value"),
        pytest.param("x in (a)", "can't understand 'x in (a)'", id="set-syntax"),
        pytest.param("x in (a,b,c)", "can't understand", id="set-syntax-with-commas"),
        pytest.param("x", "invalid selector: 'x'; can't understand 'x'", id="no-operator"),
        pytest.param(r"k=\a", r"invalid escape sequence: \a", id="bad-escape"),
    ],
)
def test_bad_strings(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as raised:
        parse_selector(text)
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("text", "requirements"),
    [
        pytest.param("a=avalue", [("a", Operator.EQUALS, "avalue")], id="equals"),
        pytest.param("b==bvalue", [("b", Operator.EQUALS, "bvalue")], id="double-equals-is-equals"),
        pytest.param("c!=cvalue", [("c", Operator.NOT_EQUALS, "cvalue")], id="not-equals"),
        pytest.param("a=a,", [("a", Operator.EQUALS, "a")], id="trailing-empty-term"),
        pytest.param(",a=a", [("a", Operator.EQUALS, "a")], id="leading-empty-term"),
        # sorted as strings, as upstream sorts its terms: "k2=v2" < "k=\\," because "2" < "="
        pytest.param(r"k=\,,k2=v2", [("k2", Operator.EQUALS, "v2"), ("k", Operator.EQUALS, ",")], id="escaped-comma"),
        pytest.param("k=\\\\,k2=v2", [("k2", Operator.EQUALS, "v2"), ("k", Operator.EQUALS, "\\")], id="escaped-bs"),
        pytest.param(
            "함=수,목=록", [("목", Operator.EQUALS, "록"), ("함", Operator.EQUALS, "수")], id="multi-byte"
        ),
        pytest.param("a = b", [("a ", Operator.EQUALS, " b")], id="no-whitespace-trimming"),
        pytest.param(
            "spec.nodeName=node-1,status.phase!=Succeeded",
            [("spec.nodeName", Operator.EQUALS, "node-1"), ("status.phase", Operator.NOT_EQUALS, "Succeeded")],
            id="kubelet-style",
        ),
    ],
)
def test_requirements(text: str, requirements: list[tuple[str, Operator, str]]) -> None:
    parsed = parse_selector(text)
    assert [(r.field, r.operator, r.value) for r in parsed.requirements] == requirements


def test_parse_is_deterministic() -> None:
    assert str(parse_selector("x=a,a=x")) == str(parse_selector("a=x,x=a")) == "a=x,x=a"


@pytest.mark.parametrize(
    ("text", "fields", "matches"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        (r"complex=\=value\\\,\\", {"complex": "=value\\,\\"}, True),
        ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False),
        ("status.podIP=", {}, True),
        ("status.podIP!=x", {}, True),
        ("status.podIP=x", {}, False),
    ],
)
def test_matches(text: str, fields: dict[str, str], matches: bool) -> None:
    assert parse_selector(text).matches(fields) is matches


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        pytest.param("", "test", None, id="empty"),
        pytest.param("a=b", "test", None, id="other-field"),
        pytest.param("test=b", "test", "b", id="pinned"),
        pytest.param("test=", "test", "", id="pinned-to-empty"),
        pytest.param("test!=b", "test", None, id="not-equals-does-not-pin"),
        pytest.param("a=x,test==b", "test", "b", id="among-others"),
    ],
)
def test_requires_exact_match(text: str, field: str, value: str | None) -> None:
    assert parse_selector(text).requires_exact_match(field) == value


def test_everything() -> None:
    assert EVERYTHING.empty and EVERYTHING.matches({"x": "y"})
    assert parse_selector("") == EVERYTHING
    assert not parse_selector("a=b").empty


def test_field_requirement_only_takes_equality_operators() -> None:
    with pytest.raises(SelectorError, match="cannot use 'in'"):
        FieldRequirement("a", Operator.IN, "b")


POD = {
    "metadata": {"name": "web-0", "namespace": "default", "uid": "u-1"},
    "spec": {"nodeName": "node-1", "hostNetwork": True, "priority": 7, "containers": [{"name": "c"}]},
    "status": {"phase": "Running", "podIP": None},
}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        pytest.param("metadata.name", "web-0", id="string"),
        pytest.param("metadata.namespace", "default", id="namespace"),
        pytest.param("spec.nodeName", "node-1", id="nested"),
        pytest.param("spec.hostNetwork", "true", id="bool"),
        pytest.param("spec.priority", "7", id="int"),
        pytest.param("status.podIP", "", id="null"),
        pytest.param("spec.schedulerName", "", id="missing"),
        pytest.param("involvedObject.uid", "", id="missing-parent"),
        pytest.param("spec.containers", "", id="list-is-not-selectable"),
        pytest.param("metadata.name.first", "", id="through-a-scalar"),
    ],
)
def test_get_field(path: str, value: str) -> None:
    assert get_field(POD, path) == value


def test_get_field_default_for_absent_booleans() -> None:
    assert get_field({"spec": {}}, "spec.hostNetwork", default="false") == "false"


def test_fields_of_feeds_a_selector() -> None:
    fields = fields_of(POD, ["metadata.name", "spec.nodeName", "status.phase"])
    assert fields == {"metadata.name": "web-0", "spec.nodeName": "node-1", "status.phase": "Running"}
    assert parse_selector("spec.nodeName=node-1,status.phase!=Succeeded").matches(fields)
    assert not parse_selector("spec.nodeName=node-2").matches(fields)


@given(st.text())
def test_escape_then_unescape_is_identity(value: str) -> None:
    assert unescape_value(escape_value(value)) == value


_FIELDS = st.from_regex(r"[a-zA-Z][a-zA-Z.]{0,12}", fullmatch=True)
_SELECTORS = st.lists(
    st.builds(FieldRequirement, _FIELDS, st.sampled_from([Operator.EQUALS, Operator.NOT_EQUALS]), st.text(max_size=8)),
    max_size=4,
).map(lambda requirements: FieldSelector(tuple(sorted(requirements, key=str))))


@given(_SELECTORS)
def test_string_form_round_trips(selector: FieldSelector) -> None:
    assert parse_selector(str(selector)) == selector


@given(_SELECTORS, st.dictionaries(_FIELDS, st.text(max_size=8), max_size=4))
def test_matching_is_a_conjunction_of_field_comparisons(selector: FieldSelector, fields: dict[str, str]) -> None:
    expected = all(
        (fields.get(r.field, "") == r.value) == (r.operator is Operator.EQUALS) for r in selector.requirements
    )
    assert selector.matches(fields) == expected
