"""Name and value validation, and field-level errors.

Upstream: k8s.io/apimachinery/pkg/util/validation (DNS names, ports, env var names, the message helpers),
pkg/api/validate/content (label keys and values, which `IsQualifiedName` now aliases),
pkg/util/validation/field (`field.Error`), and the label/annotation checks of
pkg/apis/meta/v1/validation and pkg/api/validation (`ValidateLabels`, `ValidateAnnotations`).

Two layers, as upstream:

* `is_*` validators take one value and return a list of message strings, empty when the value is valid.
  The messages are upstream's, word for word, because clients (kubectl, controllers, humans) match on them.
* `FieldError` places such a message at a field path and gives both renderings the API server needs:
  `message` (upstream `Error()`, for the Status message) and `as_cause()` (a `details.causes` entry of a
  422 Invalid Status, whose `message` is upstream's `ErrorBody()`, i.e. without the field).

Lengths are counted in UTF-8 bytes, as Go's `len` does; it only matters for the "must be no more than N
characters" message of a value that fails the (ASCII-only) pattern anyway. Patterns use `re.fullmatch`,
because Python's `$` would accept a trailing newline that Go's does not.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
DNS1035_LABEL_MAX_LENGTH = 63
QUALIFIED_NAME_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63
PORT_NAME_MAX_LENGTH = 15
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024  # bytes of all keys and values together

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + r"(\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_NAME_EXAMPLES = ("MyName", "my.name", "123-abc")
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_ENV_VAR_NAME_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"
_ENV_VAR_NAME_MSG = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', "
    "and must not start with a digit"
)

_DNS1123_LABEL = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL = re.compile(_DNS1035_LABEL_FMT)
_QUALIFIED_NAME = re.compile(_QUALIFIED_NAME_FMT)
_ENV_VAR_NAME = re.compile(_ENV_VAR_NAME_FMT)
_PORT_NAME_CHARSET = re.compile("[-a-z0-9]+")
_PORT_NAME_LETTER = re.compile("[a-z]")


def _size(value: str) -> int:
    """Go's `len(string)`: UTF-8 bytes (lone surrogates from JSON count as 3, like Go's replacement)."""
    return len(value.encode("utf-8", "surrogatepass"))


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def empty_error() -> str:
    return "must be non-empty"


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Upstream's RegexError, including its quirk of a comma before every " or " (hence the double space)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def is_dns1123_label(value: str) -> list[str]:
    """Most object names that become hostnames or path segments (namespaces, nodes' labels, ...)."""
    errors = []
    if _size(value) > DNS1123_LABEL_MAX_LENGTH:
        errors.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL.fullmatch(value):
        if _DNS1123_SUBDOMAIN.fullmatch(value):
            errors.append("must not contain dots")  # a valid subdomain: its only fault can be the dots
        else:
            errors.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errors


def is_dns1123_subdomain(value: str) -> list[str]:
    """The default rule for `metadata.name` (pods, configmaps, deployments, ...)."""
    errors = []
    if _size(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errors.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errors.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def is_dns1035_label(value: str) -> list[str]:
    """Service names: they become DNS labels and environment variable names, so start with a letter."""
    errors = []
    if _size(value) > DNS1035_LABEL_MAX_LENGTH:
        errors.append(max_len_error(DNS1035_LABEL_MAX_LENGTH))
    if not _DNS1035_LABEL.fullmatch(value):
        errors.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errors


def is_qualified_name(value: str) -> list[str]:
    """Label keys and annotation keys: an optional DNS-1123 subdomain prefix and '/', then a name."""
    prefix, slash, name = value.partition("/")
    if not slash:
        name = value
    elif "/" in name:
        return [
            "a valid label key "
            + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, *_NAME_EXAMPLES)
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    errors = []
    if slash:
        if not prefix:
            errors.append("prefix part " + empty_error())
        else:
            errors.extend("prefix part " + message for message in is_dns1123_subdomain(prefix))
    if not name:
        errors.append("name part " + empty_error())
    elif _size(name) > QUALIFIED_NAME_MAX_LENGTH:
        errors.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not _QUALIFIED_NAME.fullmatch(name):
        errors.append("name part " + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, *_NAME_EXAMPLES))
    return errors


def is_valid_label_value(value: str) -> list[str]:
    errors = []
    if _size(value) > LABEL_VALUE_MAX_LENGTH:
        errors.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if value and not _QUALIFIED_NAME.fullmatch(value):
        errors.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def is_env_var_name(value: str) -> list[str]:
    """Container `env[].name` (upstream IsEnvVarName; "." and ".." are refused as they read as paths)."""
    errors = []
    if not _ENV_VAR_NAME.fullmatch(value):
        errors.append(
            regex_error(_ENV_VAR_NAME_MSG, _ENV_VAR_NAME_FMT, "my.env-name", "MY_ENV.NAME", "MyEnvName1")
        )
    if value == ".":
        errors.append("must not be '.'")
    elif value == "..":
        errors.append("must not be '..'")
    elif value.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def is_valid_port_num(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else [inclusive_range_error(1, 65535)]


def is_valid_port_name(name: str) -> list[str]:
    """IANA_SVC_NAME (RFC 6335), lower case only: named container and service ports."""
    errors = []
    if _size(name) > PORT_NAME_MAX_LENGTH:
        errors.append(max_len_error(PORT_NAME_MAX_LENGTH))
    if not _PORT_NAME_CHARSET.fullmatch(name):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER.search(name):
        errors.append("must contain at least one letter (a-z)")
    if "--" in name:
        errors.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        errors.append("must not begin or end with a hyphen")
    return errors


class ErrorType(enum.Enum):
    """Upstream field.ErrorType; the value is the `reason` of a Status cause."""

    REQUIRED = "FieldValueRequired"
    INVALID = "FieldValueInvalid"
    DUPLICATE = "FieldValueDuplicate"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"

    @property
    def description(self) -> str:
        """The human phrase upstream's ErrorType.String() gives."""
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    ErrorType.REQUIRED: "Required value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.TOO_MANY: "Too many",
}
# Errors about a value that is absent (required), irrelevant (forbidden) or too big to echo (too long).
_VALUE_NOT_SHOWN = frozenset({ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG})


def _render_value(value: object) -> str:
    """Go's `%q` for strings (JSON quoting agrees for printable text), JSON for everything else."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True, slots=True)
class FieldError:
    """One validation failure at one field (upstream field.Error); build it with the classmethods."""

    type: ErrorType
    field: str  # e.g. "spec.containers[0].name", "metadata.labels"
    bad_value: object = None
    detail: str = ""

    @classmethod
    def required(cls, field: str, detail: str = "") -> FieldError:
        return cls(ErrorType.REQUIRED, field, "", detail)

    @classmethod
    def invalid(cls, field: str, value: object, detail: str) -> FieldError:
        return cls(ErrorType.INVALID, field, value, detail)

    @classmethod
    def duplicate(cls, field: str, value: object) -> FieldError:
        return cls(ErrorType.DUPLICATE, field, value)

    @classmethod
    def not_supported(cls, field: str, value: object, supported: Iterable[str]) -> FieldError:
        quoted = ", ".join(json.dumps(str(choice)) for choice in supported)
        return cls(ErrorType.NOT_SUPPORTED, field, value, f"supported values: {quoted}" if quoted else "")

    @classmethod
    def forbidden(cls, field: str, detail: str) -> FieldError:
        return cls(ErrorType.FORBIDDEN, field, "", detail)

    @classmethod
    def too_long(cls, field: str, max_length: int) -> FieldError:
        """The value is never echoed: it may be megabytes."""
        unit = "byte" if max_length == 1 else "bytes"
        return cls(ErrorType.TOO_LONG, field, None, f"may not be more than {max_length} {unit}")

    @classmethod
    def too_many(cls, field: str, actual: int, max_quantity: int) -> FieldError:
        """Upstream field.TooMany: a list longer than allowed (the count is shown, not the list)."""
        return cls(ErrorType.TOO_MANY, field, actual, f"must have at most {max_quantity} items")

    @property
    def body(self) -> str:
        """Upstream ErrorBody(): the message without the field, as a Status cause carries it."""
        text = self.type.description
        if self.type not in _VALUE_NOT_SHOWN:
            text += ": " + _render_value(self.bad_value)
        if self.detail:
            text += ": " + self.detail
        return text

    @property
    def message(self) -> str:
        """Upstream Error(): `metadata.name: Invalid value: "Foo": a lowercase RFC 1123 ...`."""
        return f"{self.field}: {self.body}"

    def as_cause(self) -> dict[str, str]:
        """A `details.causes[]` entry of a 422 Status (metav1.StatusCause)."""
        return {"reason": self.type.value, "message": self.body, "field": self.field}

    def __str__(self) -> str:
        return self.message


def aggregate_message(errors: Iterable[FieldError]) -> str:
    """Upstream's aggregate error text: one message alone, several as `[a, b]`, each distinct one once."""
    messages = list(dict.fromkeys(error.message for error in errors))
    if len(messages) <= 1:
        return "".join(messages)
    return "[" + ", ".join(messages) + "]"


def validate_labels(labels: Mapping[str, str], *, path: str = "metadata.labels") -> list[FieldError]:
    """Every key must be a qualified name and every value a label value (metav1 ValidateLabels)."""
    errors: list[FieldError] = []
    for key, value in labels.items():
        errors.extend(FieldError.invalid(path, key, message) for message in is_qualified_name(key))
        errors.extend(FieldError.invalid(path, value, message) for message in is_valid_label_value(value))
    return errors


def validate_annotations(
    annotations: Mapping[str, str], *, path: str = "metadata.annotations"
) -> list[FieldError]:
    """Keys are qualified names compared case-insensitively; all keys and values together fit 256 KiB."""
    errors: list[FieldError] = []
    for key in annotations:
        errors.extend(FieldError.invalid(path, key, message) for message in is_qualified_name(key.lower()))
    total = sum(_size(key) + _size(value) for key, value in annotations.items())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errors.append(FieldError.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errors


_WILDCARD_DNS1123_SUBDOMAIN_FMT = "\\*\\." + _DNS1123_SUBDOMAIN_FMT
_WILDCARD_DNS1123_SUBDOMAIN_MSG = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist "
    "of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character")
_WILDCARD_DNS1123_SUBDOMAIN = re.compile(_WILDCARD_DNS1123_SUBDOMAIN_FMT)


def is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    """Upstream IsWildcardDNS1123Subdomain: `*.example.com` (Ingress hosts and TLS hosts)."""
    errors = []
    if _size(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errors.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _WILDCARD_DNS1123_SUBDOMAIN.fullmatch(value):
        errors.append(regex_error(_WILDCARD_DNS1123_SUBDOMAIN_MSG, _WILDCARD_DNS1123_SUBDOMAIN_FMT, "*.example.com"))
    return errors
