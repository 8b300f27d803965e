"""control.apimachinery.validation against upstream's validation_test.go cases and message texts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from control.apimachinery.validation import (
    TOTAL_ANNOTATION_SIZE_LIMIT,
    ErrorType,
    FieldError,
    aggregate_message,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_env_var_name,
    is_qualified_name,
    is_valid_label_value,
    is_valid_port_name,
    is_valid_port_num,
    regex_error,
    validate_annotations,
    validate_labels,
)

DNS1123_LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def test_regex_error_reproduces_upstream_punctuation() -> None:
    assert regex_error("msg", "x+") == "msg (regex used for validation is 'x+')"
    assert regex_error("msg", "x+", "a", "b") == "msg (e.g. 'a',  or 'b', regex used for validation is 'x+')"


@pytest.mark.parametrize(
    "value",
    ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a", "1--a--b--2", "a" * 63],
)
def test_dns1123_label_accepts(value: str) -> None:
    assert is_dns1123_label(value) == []


@pytest.mark.parametrize(
    "value",
    [
        "", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_", "_a", "a_b",
        "1_", "_1", "1_2", ".", "a.", ".a", "1.", ".1", " ", "a ", " a", "a b", "1 2", "abc\n", "é",
    ],
)
def test_dns1123_label_refuses(value: str) -> None:
    assert is_dns1123_label(value) == [DNS1123_LABEL_MESSAGE]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("a.b", ["must not contain dots"], id="valid-subdomain-with-dots"),
        pytest.param("a" * 64, ["must be no more than 63 characters"], id="too-long"),
        pytest.param(
            "A" * 64, ["must be no more than 63 characters", DNS1123_LABEL_MESSAGE], id="too-long-and-bad-chars"
        ),
        pytest.param("é" * 32, ["must be no more than 63 characters", DNS1123_LABEL_MESSAGE], id="bytes-counted"),
    ],
)
def test_dns1123_label_messages(value: str, expected: list[str]) -> None:
    assert is_dns1123_label(value) == expected


@pytest.mark.parametrize(
    "value",
    ["a", "a.a", "a--1--2--b.a", "0.a", "1--a--b--2", "0.1", "a.b.c.d.e", "aa.bb.cc.dd.ee", "1.2.3.4.5", "a" * 253],
)
def test_dns1123_subdomain_accepts(value: str) -> None:
    assert is_dns1123_subdomain(value) == []


@pytest.mark.parametrize(
    "value",
    ["", "A", "a..b", ".a", "a.", "-a.b", "a-.b", "A.a", "aB.a", "a.B.c", "a@b", "a,b", "a_b", "a;b", "a:b", "a b"],
)
def test_dns1123_subdomain_refuses(value: str) -> None:
    assert len(is_dns1123_subdomain(value)) == 1
    assert is_dns1123_subdomain(value)[0].startswith("a lowercase RFC 1123 subdomain must consist of")


def test_dns1123_subdomain_length_limit() -> None:
    assert is_dns1123_subdomain("a" * 254) == ["must be no more than 253 characters"]


@pytest.mark.parametrize("value", ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "a" * 63])
def test_dns1035_label_accepts(value: str) -> None:
    assert is_dns1035_label(value) == []


@pytest.mark.parametrize(
    "value", ["0", "01", "012", "1a", "1-a", "1--a--b--2", "", "A", "a-", "-a", "a_b", "a.b", "a b", "a" * 64]
)
def test_dns1035_label_refuses(value: str) -> None:
    assert is_dns1035_label(value) != []


def test_dns1035_label_message_says_it_must_start_with_a_letter() -> None:
    assert is_dns1035_label("1a") == [
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
        "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
        "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    ]


@pytest.mark.parametrize(
    "value",
    [
        "simple", "now-with-dashes", "1-starts-with-num", "1234", "simple/simple", "now-with-dashes/simple",
        "now.with.dots/simple", "now-with.dashes-and.dots/simple", "1-num.2-num/3-num", "1234/5678",
        "1.2.3.4/5678", "Uppercase_Is_OK_123", "example.com/Uppercase_Is_OK_123", "requests.storage-foo",
        "a" * 63, "a" * 253 + "/" + "b" * 63,
    ],
)
def test_qualified_name_accepts(value: str) -> None:
    assert is_qualified_name(value) == []


@pytest.mark.parametrize(
    ("value", "first_message"),
    [
        pytest.param("nospecialchars%^=@", "name part must consist of alphanumeric", id="special-chars"),
        pytest.param("cantendwithadash-", "name part must consist of alphanumeric", id="trailing-dash"),
        pytest.param("-cantstartwithadash-", "name part must consist of alphanumeric", id="leading-dash"),
        pytest.param("only/one/slash", "a valid label key must consist of", id="two-slashes"),
        pytest.param("Example.com/abc", "prefix part a lowercase RFC 1123 subdomain", id="uppercase-prefix"),
        pytest.param("example_com/abc", "prefix part a lowercase RFC 1123 subdomain", id="underscore-prefix"),
        pytest.param("example.com/", "name part must be non-empty", id="empty-name"),
        pytest.param("/simple", "prefix part must be non-empty", id="empty-prefix"),
        pytest.param("a" * 64, "name part must be no more than 63 characters", id="name-too-long"),
        pytest.param("a" * 254 + "/abc", "prefix part must be no more than 253 characters", id="prefix-too-long"),
        pytest.param("trailing\n", "name part must consist of alphanumeric", id="trailing-newline"),
    ],
)
def test_qualified_name_refuses(value: str, first_message: str) -> None:
    errors = is_qualified_name(value)
    assert errors
    assert errors[0].startswith(first_message)


@pytest.mark.parametrize(
    "value", ["", "simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234", "a" * 63, "Up_1.x"]
)
def test_label_value_accepts(value: str) -> None:
    assert is_valid_label_value(value) == []


@pytest.mark.parametrize(
    "value",
    [
        "nospecialchars%^=@", "Tama-nui-te-rā.is.Māori.sun", "\\backslashes\\are\\bad", "-starts-with-dash",
        "ends-with-dash-", ".starts.with.dot", "ends.with.dot.", "a" * 64, "a/b", "v\n",
    ],
)
def test_label_value_refuses(value: str) -> None:
    assert is_valid_label_value(value) != []


def test_label_value_message() -> None:
    assert is_valid_label_value("-x") == [
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
        "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    ]


@pytest.mark.parametrize("value", ["A", "ABC", "AbC123", "_abc", "_", "a.b", "a-b", "-ab", ".ab", "my.env-name"])
def test_env_var_name_accepts(value: str) -> None:
    assert is_env_var_name(value) == []


@pytest.mark.parametrize(
    ("value", "expected_tail"),
    [
        pytest.param("1abc", None, id="leading-digit"),
        pytest.param("a b", None, id="space"),
        pytest.param("a=b", None, id="equals"),
        pytest.param("", None, id="empty"),
        pytest.param(".", "must not be '.'", id="dot"),
        pytest.param("..", "must not be '..'", id="dotdot"),
        pytest.param("..abc", "must not start with '..'", id="dotdot-prefix"),
    ],
)
def test_env_var_name_refuses(value: str, expected_tail: str | None) -> None:
    errors = is_env_var_name(value)
    assert errors
    if expected_tail is None:
        assert errors == [
            "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', "
            "and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex "
            "used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
        ]
    else:
        assert errors == [expected_tail]


@pytest.mark.parametrize(
    ("port", "valid"), [(1, True), (80, True), (65535, True), (0, False), (-1, False), (65536, False)]
)
def test_port_numbers(port: int, valid: bool) -> None:
    assert is_valid_port_num(port) == ([] if valid else ["must be between 1 and 65535, inclusive"])


@pytest.mark.parametrize("name", ["telnet", "re-mail-ck", "pop3", "a", "a-1", "1-a", "a-1-b-2-c", "1-a-2-b-3"])
def test_port_name_accepts(name: str) -> None:
    assert is_valid_port_name(name) == []


CHARSET = "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("", [CHARSET, "must contain at least one letter (a-z)"], id="empty"),
        pytest.param("-telnet", ["must not begin or end with a hyphen"], id="leading-hyphen"),
        pytest.param("telnet-", ["must not begin or end with a hyphen"], id="trailing-hyphen"),
        pytest.param("fin--ger", ["must not contain consecutive hyphens"], id="double-hyphen"),
        pytest.param("a1234567890123456", ["must be no more than 15 characters"], id="too-long"),
        pytest.param("1234", ["must contain at least one letter (a-z)"], id="digits-only"),
        pytest.param("Upper", [CHARSET], id="upper"),
        pytest.param("a_b", [CHARSET], id="underscore"),
    ],
)
def test_port_name_refuses(name: str, expected: list[str]) -> None:
    assert is_valid_port_name(name) == expected


@pytest.mark.parametrize(
    ("error", "message", "cause"),
    [
        pytest.param(
            FieldError.required("spec.containers[0].name"),
            "spec.containers[0].name: Required value",
            {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers[0].name"},
            id="required",
        ),
        pytest.param(
            FieldError.invalid("metadata.name", "Foo", is_dns1123_label("Foo")[0]),
            'metadata.name: Invalid value: "Foo": ' + DNS1123_LABEL_MESSAGE,
            {
                "reason": "FieldValueInvalid",
                "message": 'Invalid value: "Foo": ' + DNS1123_LABEL_MESSAGE,
                "field": "metadata.name",
            },
            id="invalid-string",
        ),
        pytest.param(
            FieldError.invalid("spec.ports[0].port", 0, "must be between 1 and 65535, inclusive"),
            "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            None,
            id="invalid-int",
        ),
        pytest.param(
            FieldError.invalid("spec.hostNetwork", True, "nope"),
            "spec.hostNetwork: Invalid value: true: nope",
            None,
            id="invalid-bool",
        ),
        pytest.param(
            FieldError.invalid("spec.selector", None, "must be set"),
            "spec.selector: Invalid value: null: must be set",
            None,
            id="invalid-null",
        ),
        pytest.param(
            FieldError.invalid("values", ["b", "a"], "bad"),
            'values: Invalid value: ["b","a"]: bad',
            None,
            id="invalid-list-as-json",
        ),
        pytest.param(
            FieldError.not_supported("spec.restartPolicy", "Sometimes", ["Always", "OnFailure", "Never"]),
            'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
            {
                "reason": "FieldValueNotSupported",
                "message": 'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
                "field": "spec.restartPolicy",
            },
            id="not-supported",
        ),
        pytest.param(
            FieldError.duplicate("spec.containers[1].name", "web"),
            'spec.containers[1].name: Duplicate value: "web"',
            None,
            id="duplicate",
        ),
        pytest.param(
            FieldError.forbidden("spec.nodeName", "may not be changed"),
            "spec.nodeName: Forbidden: may not be changed",
            {"reason": "FieldValueForbidden", "message": "Forbidden: may not be changed", "field": "spec.nodeName"},
            id="forbidden-hides-value",
        ),
        pytest.param(
            FieldError.too_long("metadata.annotations", 262144),
            "metadata.annotations: Too long: may not be more than 262144 bytes",
            None,
            id="too-long",
        ),
    ],
)
def test_field_error_rendering(error: FieldError, message: str, cause: dict[str, str] | None) -> None:
    assert error.message == message
    assert str(error) == message
    if cause is not None:
        assert error.as_cause() == cause


def test_error_type_values_are_status_cause_reasons() -> None:
    assert [t.value for t in ErrorType] == [
        "FieldValueRequired",
        "FieldValueInvalid",
        "FieldValueDuplicate",
        "FieldValueNotSupported",
        "FieldValueForbidden",
        "FieldValueTooLong",
        "FieldValueTooMany",
    ]


def test_aggregate_message() -> None:
    first = FieldError.required("a")
    second = FieldError.forbidden("b", "no")
    assert aggregate_message([]) == ""
    assert aggregate_message([first]) == "a: Required value"
    assert aggregate_message([first, second, first]) == "[a: Required value, b: Forbidden: no]"


def test_validate_labels_reports_key_and_value_at_the_path() -> None:
    errors = validate_labels({"ok": "fine", "bad key": "v", "k": "-bad"}, path="spec.template.metadata.labels")
    assert [(e.type, e.field, e.bad_value) for e in errors] == [
        (ErrorType.INVALID, "spec.template.metadata.labels", "bad key"),
        (ErrorType.INVALID, "spec.template.metadata.labels", "-bad"),
    ]
    assert validate_labels({"app.kubernetes.io/name": "web", "tier": ""}) == []


def test_annotation_keys_are_case_insensitive_but_still_qualified_names() -> None:
    assert validate_annotations({"Example.COM/Some-Key": "x"}) == []
    assert validate_labels({"Example.COM/Some-Key": "x"}) != []
    (error,) = validate_annotations({"a/b/c": "x"})
    assert error.field == "metadata.annotations"
    assert error.bad_value == "a/b/c"


@pytest.mark.parametrize(("extra", "too_long"), [(0, False), (1, True)])
def test_annotation_total_size_limit(extra: int, too_long: bool) -> None:
    key = "k"
    annotations = {key: "v" * (TOTAL_ANNOTATION_SIZE_LIMIT - len(key) + extra)}
    errors = validate_annotations(annotations)
    assert errors == ([FieldError.too_long("metadata.annotations", 262144)] if too_long else [])


@given(st.from_regex(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", fullmatch=True))
def test_every_dns1123_label_is_a_subdomain_and_a_qualified_name(label: str) -> None:
    assert is_dns1123_label(label) == []
    assert is_dns1123_subdomain(label) == []
    assert is_qualified_name(label) == []
    assert is_valid_label_value(label) == []


@given(st.text(max_size=70))
def test_label_value_validity_agrees_with_its_definition(value: str) -> None:
    alphanumeric = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    valid = value == "" or (
        len(value.encode()) <= 63
        and value[0] in alphanumeric
        and value[-1] in alphanumeric
        and all(c in alphanumeric or c in "-_." for c in value)
    )
    assert (is_valid_label_value(value) == []) == valid
