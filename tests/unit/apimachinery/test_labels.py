"""control.apimachinery.labels against upstream's selector_test.go tables."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from control.apimachinery import labels
from control.apimachinery.labels import (
    EVERYTHING,
    NOTHING,
    Operator,
    Requirement,
    Selector,
    SelectorError,
    parse_selector,
    selector_from_label_selector,
    selector_from_set,
)


@pytest.mark.parametrize(
    "text",
    ["x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5", "x==a"],
)
def test_good_strings_reprint_without_spaces(text: str) -> None:
    """Upstream TestSelectorParse: the string form is the input minus its spaces."""
    assert str(parse_selector(text)) == text.replace(" ", "")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("x=a||y=b", 'unable to parse requirement: values[0][x]: Invalid value: "a||y"', id="pipes"),
        pytest.param("x==a==b", "found '==', expected: ',' or 'end of string'", id="double-comparison"),
        pytest.param("!x=a", "found '=', expected: ',' or 'end of string'", id="negated-with-value"),
        pytest.param("x<a", "the value must be an integer", id="lt-not-integer"),
        pytest.param("x>99999999999999999999", "the value must be an integer", id="gt-beyond-int64"),
        pytest.param("x,,y", "found ',', expected: identifier after ','", id="double-comma"),
        pytest.param(",x,y", "found ',', expected: !, identifier, or 'end of string'", id="leading-comma"),
        pytest.param("x nott in (y)", "found 'nott', expected: in, notin, =, ==, !=, gt, lt", id="bad-operator"),
        pytest.param("a in (xyz),", "found '', expected: identifier after ','", id="trailing-comma"),
        pytest.param("a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'", id="missing-comma"),
        pytest.param("a in (xyz abc)", "found 'abc', expected: ',' or ')'", id="space-in-set"),
        pytest.param("a notin(", "found '', expected: ',', ')' or identifier", id="unclosed-empty-set"),
        pytest.param("x in (a", "found '', expected: ',' or ')'", id="unclosed-set"),
        pytest.param("x in a", "found 'a' expected: '('", id="set-without-parens"),
        pytest.param("a (", "found '(', expected: in, notin", id="paren-without-operator"),
        pytest.param("(", "found '(', expected: !, identifier, or 'end of string'", id="lone-paren"),
        pytest.param("x=(a,b)", "found '(', expected: identifier", id="equals-a-set"),
        pytest.param("a/b/c", 'key: Invalid value: "a/b/c": a valid label key must consist', id="two-slashes"),
        pytest.param("-a", 'key: Invalid value: "-a": name part must consist', id="bad-key"),
        pytest.param("a=" + "v" * 64, "must be no more than 63 characters", id="value-too-long"),
    ],
)
def test_bad_strings_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as raised:
        parse_selector(text)
    assert message in str(raised.value)
    assert isinstance(raised.value, ValueError)  # what the API server turns into a 400


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("\rx", [Requirement("x", Operator.EXISTS)], id="carriage-return-is-space"),
        pytest.param(
            "this-is-a-dns.domain.com/key-with-dash",
            [Requirement("this-is-a-dns.domain.com/key-with-dash", Operator.EXISTS)],
            id="prefixed-key",
        ),
        pytest.param(
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            [Requirement("0.1.2.domain/99", Operator.NOT_IN, ("10.10.100.1", "tick.tack.clock"))],
            id="notin-with-spaces",
        ),
        pytest.param("foo  in\t (abc)", [Requirement("foo", Operator.IN, ("abc",))], id="tabs"),
        pytest.param("x notin\n (abc)", [Requirement("x", Operator.NOT_IN, ("abc",))], id="newline"),
        pytest.param("x in (abc,)", [Requirement("x", Operator.IN, ("abc", ""))], id="trailing-empty-value"),
        pytest.param("x in ()", [Requirement("x", Operator.IN, ("",))], id="empty-set-is-empty-value"),
        pytest.param("x notin ( )", [Requirement("x", Operator.NOT_IN, ("",))], id="spaced-empty-set"),
        pytest.param("x notin (, a)", [Requirement("x", Operator.NOT_IN, ("", "a"))], id="leading-empty-value"),
        pytest.param(
            "x notin (abc,,def),bar,z in (),w",
            [
                Requirement("bar", Operator.EXISTS),
                Requirement("w", Operator.EXISTS),
                Requirement("x", Operator.NOT_IN, ("abc", "", "def")),
                Requirement("z", Operator.IN, ("",)),
            ],
            id="sorted-by-key",
        ),
        pytest.param(
            "a in (x,y,notin, z,in)",
            [Requirement("a", Operator.IN, ("in", "notin", "x", "y", "z"))],
            id="keywords-as-values",
        ),
        pytest.param("in=notin", [Requirement("in", Operator.EQUALS, ("notin",))], id="keywords-as-key-and-value"),
        pytest.param("a ", [Requirement("a", Operator.EXISTS)], id="trailing-space"),
        pytest.param("x!=a", [Requirement("x", Operator.NOT_EQUALS, ("a",))], id="not-equals"),
        pytest.param("x>1", [Requirement("x", Operator.GREATER_THAN, ("1",))], id="gt"),
        pytest.param("x<7", [Requirement("x", Operator.LESS_THAN, ("7",))], id="lt"),
    ],
)
def test_parse_requirements(text: str, expected: list[Requirement]) -> None:
    assert parse_selector(text).requirements == tuple(expected)


def test_same_key_requirements_keep_their_written_order() -> None:
    assert str(parse_selector("z,x=a,z!=a")) == "x=a,z,z!=a"


def test_parse_is_deterministic() -> None:
    assert str(parse_selector("x=a,a=x")) == str(parse_selector("a=x,x=a")) == "a=x,x=a"


@pytest.mark.parametrize(
    ("text", "labels_", "matches"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x", {"x": "z"}, True),
        ("!x", {"y": "z"}, True),
        ("x>1", {"x": "2"}, True),
        ("x<1", {"x": "0"}, True),
        ("x=z", {}, False),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("x", {"y": "z"}, False),
        ("!x", {"x": "z"}, False),
        ("x>1", {"x": "0"}, False),
        ("x<1", {"x": "2"}, False),
        ("x>1", {}, False),
        ("x>1", {"x": "v2"}, False),
        ("x in (foo),y notin (alpha)", {"x": "foo", "y": "baz"}, True),
        ("x in (foo),y in (alpha)", {"x": "foo", "y": "baz"}, False),
        ("x notin (),y", {"y": ""}, True),
        ("!x,y", {"y": ""}, True),
        ("x notin (),!y", {"y": ""}, False),
        ("x in ()", {"y": "baz"}, False),
        ("x in ()", {"x": ""}, True),
        ("x notin (a)", {}, True),
        ("x=", {"x": ""}, True),
        ("x=", {}, False),
        ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False),
    ],
)
def test_matches(text: str, labels_: dict[str, str], matches: bool) -> None:
    assert parse_selector(text).matches(labels_) is matches


@pytest.mark.parametrize(
    ("key", "operator", "values", "valid"),
    [
        ("x", Operator.IN, (), False),
        ("x", Operator.NOT_IN, (), False),
        ("x", Operator.IN, ("foo",), True),
        ("x", Operator.NOT_IN, ("foo",), True),
        ("x", Operator.EXISTS, (), True),
        ("x", Operator.DOES_NOT_EXIST, (), True),
        ("x", Operator.EXISTS, ("foo",), False),
        ("x", Operator.EQUALS, ("a", "b"), False),
        ("1foo", Operator.IN, ("bar",), True),
        ("1234", Operator.IN, ("bar",), True),
        ("y", Operator.GREATER_THAN, ("1",), True),
        ("z", Operator.LESS_THAN, ("6",), True),
        ("foo", Operator.GREATER_THAN, ("bar",), False),
        ("barz", Operator.LESS_THAN, ("blah",), False),
        ("y", Operator.GREATER_THAN, ("1", "2"), False),
        ("a" * 254, Operator.EXISTS, (), False),
    ],
)
def test_requirement_constructor_validates(key: str, operator: Operator, values: tuple[str, ...], valid: bool) -> None:
    if valid:
        Requirement(key, operator, values)
    else:
        with pytest.raises(SelectorError):
            Requirement(key, operator, values)


def test_requirement_with_unknown_operator_lists_the_supported_ones() -> None:
    with pytest.raises(SelectorError, match=r'operator: Unsupported value: "~": supported values: "!", "="'):
        Requirement("x", "~", ("a",))  # type: ignore[arg-type]


def test_requirement_errors_are_aggregated() -> None:
    with pytest.raises(SelectorError) as raised:
        Requirement("-x", Operator.IN, ())
    assert str(raised.value).startswith('[key: Invalid value: "-x": name part must consist')
    assert "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty]" in str(raised.value)


@pytest.mark.parametrize(
    ("requirements", "text"),
    [
        (
            [
                Requirement("x", Operator.IN, ("def", "abc")),
                Requirement("y", Operator.NOT_IN, ("jkl",)),
                Requirement("z", Operator.EXISTS),
            ],
            "x in (abc,def),y notin (jkl),z",
        ),
        (
            [
                Requirement("x", Operator.NOT_IN, ("abc", "def")),
                Requirement("y", Operator.NOT_EQUALS, ("jkl",)),
                Requirement("z", Operator.DOES_NOT_EXIST),
            ],
            "x notin (abc,def),y!=jkl,!z",
        ),
        (
            [
                Requirement("x", Operator.NOT_IN, ("abc",)),
                Requirement("y", Operator.IN, ("jkl", "mno")),
                Requirement("z", Operator.NOT_IN, ("",)),
            ],
            "x notin (abc),y in (jkl,mno),z notin ()",
        ),
        (
            [
                Requirement("x", Operator.EQUALS, ("abc",)),
                Requirement("y", Operator.DOUBLE_EQUALS, ("jkl",)),
                Requirement("z", Operator.NOT_EQUALS, ("a",)),
                Requirement("z", Operator.EXISTS),
            ],
            "x=abc,y==jkl,z!=a,z",
        ),
        (
            [
                Requirement("x", Operator.GREATER_THAN, ("2",)),
                Requirement("y", Operator.LESS_THAN, ("8",)),
                Requirement("z", Operator.EXISTS),
            ],
            "x>2,y<8,z",
        ),
    ],
)
def test_string_form(requirements: list[Requirement], text: str) -> None:
    assert str(Selector(tuple(requirements))) == text


def test_everything_and_nothing() -> None:
    assert EVERYTHING.matches({"x": "y"}) and EVERYTHING.empty
    assert not NOTHING.matches({}) and not NOTHING.empty
    assert str(NOTHING) == str(EVERYTHING) == ""
    assert NOTHING != EVERYTHING
    assert parse_selector("") == EVERYTHING
    assert repr(NOTHING) == "labels.NOTHING"
    assert repr(parse_selector("a=b")) == "labels.Selector('a=b')"


@pytest.mark.parametrize(
    ("selector", "labels_", "matches"),
    [
        ({}, {"foo": "bar", "baz": "blah"}, True),
        ({"foo": "bar"}, {"foo": "bar", "baz": "blah"}, True),
        ({"foo": "bar", "baz": "blah"}, {"foo": "bar", "baz": "blah"}, True),
        ({"foo": "blah"}, {"foo": "bar", "baz": "blah"}, False),
        ({"foo": "bar", "foobar": "bar"}, {"foo": "bar", "baz": "blah"}, False),
    ],
)
def test_selector_from_set(selector: dict[str, str], labels_: dict[str, str], matches: bool) -> None:
    assert selector_from_set(selector).matches(labels_) is matches


def test_selector_from_set_keeps_upstream_semantics_for_empty_and_none() -> None:
    assert selector_from_set({}) == EVERYTHING
    assert selector_from_set(None) == EVERYTHING
    assert str(selector_from_set({"b": "2", "a": "1"})) == "a=1,b=2"


def test_selector_from_set_validates() -> None:
    with pytest.raises(SelectorError, match=r"values\[0\]\[Key\]: Invalid value: .*must be no more than 63"):
        selector_from_set({"Key": "a" * 64})


@pytest.mark.parametrize(
    ("obj", "text", "matching", "not_matching"),
    [
        pytest.param({}, "", {}, None, id="empty-selects-everything"),
        pytest.param({"matchLabels": {"app": "web"}}, "app=web", {"app": "web"}, {"app": "db"}, id="match-labels"),
        pytest.param(
            {
                "matchLabels": {"tier": "front"},
                "matchExpressions": [
                    {"key": "env", "operator": "In", "values": ["prod", "canary"]},
                    {"key": "legacy", "operator": "DoesNotExist"},
                    {"key": "app", "operator": "Exists", "values": []},
                    {"key": "zone", "operator": "NotIn", "values": ["b"]},
                ],
            },
            "app,env in (canary,prod),!legacy,tier=front,zone notin (b)",
            {"app": "x", "env": "prod", "tier": "front"},
            {"app": "x", "env": "prod", "tier": "front", "legacy": "1"},
            id="expressions",
        ),
    ],
)
def test_selector_from_label_selector(
    obj: dict, text: str, matching: dict[str, str], not_matching: dict[str, str] | None
) -> None:
    selector = selector_from_label_selector(obj)
    assert str(selector) == text
    assert selector.matches(matching)
    if not_matching is not None:
        assert not selector.matches(not_matching)


def test_nil_label_selector_selects_nothing() -> None:
    assert selector_from_label_selector(None) is NOTHING
    assert not selector_from_label_selector(None).matches({})


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        pytest.param({"key": "a", "operator": "In"}, "values set can't be empty", id="in-without-values"),
        pytest.param({"key": "a", "operator": "NotIn", "values": []}, "values set can't be empty", id="notin-empty"),
        pytest.param(
            {"key": "a", "operator": "Exists", "values": ["x"]},
            "values set must be empty for exists and does not exist",
            id="exists-with-values",
        ),
        pytest.param(
            {"key": "a", "operator": "DoesNotExist", "values": ["x"]},
            "values set must be empty for exists and does not exist",
            id="does-not-exist-with-values",
        ),
        pytest.param({"key": "a", "operator": "Gt", "values": ["1"]}, '"Gt" is not a valid label selector', id="gt"),
        pytest.param({"key": "a b", "operator": "Exists"}, 'key: Invalid value: "a b"', id="bad-key"),
    ],
)
def test_label_selector_validation(expression: dict, message: str) -> None:
    with pytest.raises(SelectorError, match=message):
        selector_from_label_selector({"matchExpressions": [expression]})


_NAMES = st.from_regex(r"[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,8}[a-zA-Z0-9])?", fullmatch=True)
_PREFIXES = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?(\.[a-z0-9]{1,5}){0,2}", fullmatch=True)
_KEYS = st.one_of(_NAMES, st.builds(lambda prefix, name: f"{prefix}/{name}", _PREFIXES, _NAMES))
_VALUES = st.one_of(st.just(""), _NAMES)


@st.composite
def _requirements(draw: st.DrawFn) -> Requirement:
    key = draw(_KEYS)
    operator = draw(st.sampled_from(list(Operator)))
    if operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
        return Requirement(key, operator)
    if operator in (Operator.GREATER_THAN, Operator.LESS_THAN):
        return Requirement(key, operator, (str(draw(st.integers(0, 2**63 - 1))),))
    if operator in (Operator.IN, Operator.NOT_IN):
        return Requirement(key, operator, tuple(draw(st.lists(_VALUES, min_size=1, max_size=4))))
    return Requirement(key, operator, (draw(_VALUES),))


_SELECTORS = st.lists(_requirements(), max_size=5).map(
    lambda requirements: Selector(tuple(sorted(requirements, key=lambda requirement: requirement.key)))
)


@given(_SELECTORS)
def test_string_form_round_trips(selector: Selector) -> None:
    assert parse_selector(str(selector)) == selector


@given(_SELECTORS, st.dictionaries(_KEYS, _VALUES, max_size=5))
def test_reparsed_selector_matches_the_same_labels(selector: Selector, labels_: dict[str, str]) -> None:
    assert parse_selector(str(selector)).matches(labels_) == selector.matches(labels_)


@given(st.dictionaries(_KEYS, _VALUES, max_size=5), st.dictionaries(_KEYS, _VALUES, max_size=5))
def test_set_selector_is_subset_test(wanted: dict[str, str], actual: dict[str, str]) -> None:
    expected = all(key in actual and actual[key] == value for key, value in wanted.items())
    assert selector_from_set(wanted).matches(actual) == expected
    assert labels.parse_selector(str(selector_from_set(wanted))) == selector_from_set(wanted)
