"""The shared field checks of API validation: a reader of decoded JSON that collects field errors, object
metadata, label selectors and int-or-percent values.

Upstream: k8s.io/apimachinery/pkg/api/validation (ValidateObjectMeta), pkg/apis/meta/v1/validation
(ValidateLabelSelector) and pkg/apis/apps/validation (ValidatePositiveIntOrPercent, IsNotMoreThan100Percent).

Upstream validates typed Go structs that the JSON decoder already refused to build from a malformed body;
here objects are the decoded JSON itself, so every read goes through `Check`, which reports a field of the
wrong JSON type as `Invalid value: ...: must be of type integer` (where upstream answers 400 with the
decoder's message) and lets the rest of the object be validated. Validation never raises on any JSON value.

Everything the group modules share lives here or in `pods.py`; the group modules import nothing from each
other, and `table.py` assembles their tables.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from control.apimachinery.labels import Selector, SelectorError, selector_from_label_selector
from control.apimachinery.quantity import Quantity, QuantityError
from control.apimachinery.validation import FieldError, regex_error, validate_annotations, validate_labels

NEGATIVE_MESSAGE = "must be greater than or equal to 0"
IMMUTABLE_MESSAGE = "field is immutable"
PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")  # upstream lists a set, hence sorted
_TYPE_NAMES = {dict: "object", list: "array", str: "string", int: "integer", bool: "boolean"}
_PERCENT_FMT = "[0-9]+%"
_PERCENT = re.compile(_PERCENT_FMT)
_PERCENT_MSG = "a valid percent string must be a numeric string followed by an ending '%'"


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class Check:
    """Collects FieldErrors; its readers return a field only when it holds the expected JSON type."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def add(self, errors: Iterable[FieldError]) -> None:
        self.errors.extend(errors)

    def invalid(self, path: str, value: object, messages: Iterable[str]) -> None:
        self.errors.extend(FieldError.invalid(path, value, message) for message in messages)

    def _typed(self, parent: Mapping[str, Any], key: str, path: str, kind: type) -> Any:
        value = parent.get(key)
        if value is None:
            return None
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            self.errors.append(FieldError.invalid(path, value, f"must be of type {_TYPE_NAMES[kind]}"))
            return None
        return value

    def obj(self, parent: Mapping[str, Any], key: str, path: str) -> dict[str, Any] | None:
        """A JSON object: {} when absent (Go's zero value), None when of another type."""
        value = self._typed(parent, key, path, dict)
        return {} if value is None and parent.get(key) is None else value

    def items(self, parent: Mapping[str, Any], key: str, path: str) -> list[tuple[str, dict[str, Any]]]:
        """The objects of a JSON array with their paths (`spec.ports[1]`); other items are reported."""
        result = []
        for index, item in enumerate(self._typed(parent, key, path, list) or ()):
            item_path = f"{path}[{index}]"
            if isinstance(item, dict):
                result.append((item_path, item))
            else:
                self.errors.append(FieldError.invalid(item_path, item, "must be of type object"))
        return result

    def text(self, parent: Mapping[str, Any], key: str, path: str) -> str | None:
        """A string: "" when absent, None when of another type."""
        value = self._typed(parent, key, path, str)
        return "" if value is None and parent.get(key) is None else value

    def texts(self, parent: Mapping[str, Any], key: str, path: str) -> list[str]:
        """A list of strings; items of other types are reported and dropped."""
        result = []
        for index, item in enumerate(self._typed(parent, key, path, list) or ()):
            if isinstance(item, str):
                result.append(item)
            else:
                self.errors.append(FieldError.invalid(f"{path}[{index}]", item, "must be of type string"))
        return result

    def integer(self, parent: Mapping[str, Any], key: str, path: str) -> int | None:
        value: int | None = self._typed(parent, key, path, int)
        return value

    def strings(self, parent: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
        """A map of strings (labels, selectors, configmap data); entries of other types are reported."""
        result = {}
        for name, value in (self._typed(parent, key, path, dict) or {}).items():
            if isinstance(value, str):
                result[name] = value
            else:
                self.errors.append(FieldError.invalid(f"{path}[{name}]", value, "must be of type string"))
        return result

    def nonnegative(self, parent: Mapping[str, Any], key: str, path: str) -> None:
        if (value := self.integer(parent, key, path)) is not None and value < 0:
            self.errors.append(FieldError.invalid(path, value, NEGATIVE_MESSAGE))

    def supported(self, parent: Mapping[str, Any], key: str, path: str, choices: Iterable[str], *,
                  required: bool = False) -> str | None:
        """A string that must be one of `choices`; returns it when it is."""
        value = self.text(parent, key, path)
        if value == "" and required:
            self.errors.append(FieldError.required(path))
        elif value and value not in choices:
            self.errors.append(FieldError.not_supported(path, value, choices))
        return value if value is not None and value in choices else None

    def quantity(self, value: object, path: str) -> Quantity | None:
        """A resource quantity, as a string or a JSON number."""
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self.errors.append(FieldError.invalid(path, value, "must be a quantity (a string or a number)"))
            return None
        try:
            return Quantity(value if not isinstance(value, float) else repr(value))
        except (QuantityError, ValueError) as exc:
            self.errors.append(FieldError.invalid(path, value, str(exc)))
            return None

    def immutable(self, new: object, old: object, path: str) -> None:
        if new != old:
            self.errors.append(FieldError.invalid(path, new, IMMUTABLE_MESSAGE))




Validator = Callable[[Check, Mapping[str, Any], Mapping[str, Any] | None], None]
"""Checks one kind's object (`old`: the stored object on update) and adds its errors to the Check."""

NameValidator = Callable[[str], list[str]]
"""The messages for a `metadata.name` the kind refuses (DNS-1123 subdomain unless a group says otherwise)."""


# --- metadata, selectors, int-or-percent ---------------------------------------------------------------

def validate_object_meta(c: Check, metadata: Mapping[str, Any], path: str, *,
                         name_validator: NameValidator | None) -> None:
    """Upstream ValidateObjectMeta; `name_validator` None for a pod template, whose name is ignored."""
    if name_validator is not None:
        name = c.text(metadata, "name", join(path, "name"))
        if name == "":
            c.add([FieldError.required(join(path, "name"), "name or generateName is required")])
        elif name is not None:
            c.invalid(join(path, "name"), name, name_validator(name))
    c.add(validate_labels(c.strings(metadata, "labels", join(path, "labels")), path=join(path, "labels")))
    annotations = c.strings(metadata, "annotations", join(path, "annotations"))
    c.add(validate_annotations(annotations, path=join(path, "annotations")))


def label_selector(c: Check, spec: Mapping[str, Any], path: str, *, kind: str,
                   required: bool = True) -> Selector | None:
    """A metav1.LabelSelector that must be well formed, and (`required`, a controller's) present and
    non-empty."""
    raw = spec.get("selector")
    if raw is None:
        if required:
            c.add([FieldError.required(path)])
        return None
    if (selector := c.obj(spec, "selector", path)) is None:
        return None
    before = len(c.errors)
    labels_path = join(path, "matchLabels")
    cleaned: dict[str, Any] = {"matchLabels": c.strings(selector, "matchLabels", labels_path), "matchExpressions": []}
    c.add(validate_labels(cleaned["matchLabels"], path=labels_path))
    for expression_path, expression in c.items(selector, "matchExpressions", join(path, "matchExpressions")):
        cleaned["matchExpressions"].append({
            "key": c.text(expression, "key", join(expression_path, "key")),
            "operator": c.text(expression, "operator", join(expression_path, "operator")),
            "values": c.texts(expression, "values", join(expression_path, "values")),
        })
    if len(c.errors) > before:
        return None
    try:
        parsed = selector_from_label_selector(cleaned)
    except SelectorError as exc:
        c.add([FieldError.invalid(path, raw, str(exc))])
        return None
    if parsed.empty and required:
        c.add([FieldError.invalid(path, raw, f"empty selector is invalid for {kind}")])
        return None
    return parsed


def int_or_percent(c: Check, parent: Mapping[str, Any], key: str, path: str,
                   *, at_most_100: bool | None = None) -> bool:
    """A rolling update or disruption budget bound (`1` or `"25%"`); returns whether it is a valid zero.
    Percentages above 100% are refused for `maxUnavailable`, or where `at_most_100` says so."""
    value = parent.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            c.add([FieldError.invalid(path, value, NEGATIVE_MESSAGE)])
        return value == 0
    if isinstance(value, str):
        if not _PERCENT.fullmatch(value):
            c.add([FieldError.invalid(path, value, regex_error(_PERCENT_MSG, _PERCENT_FMT, "1%", "93%"))])
            return False
        if (key == "maxUnavailable" if at_most_100 is None else at_most_100) and int(value[:-1]) > 100:
            c.add([FieldError.invalid(path, value, "must not be greater than 100%")])
        return int(value[:-1]) == 0
    if value is not None:
        c.add([FieldError.invalid(path, value, "must be an integer or a percent string")])
    return False
