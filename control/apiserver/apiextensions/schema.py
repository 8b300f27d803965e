"""Structural schemas: checking a CRD's openAPIV3Schema, then validating, defaulting and pruning custom
objects with it.

Upstream: k8s.io/apiextensions-apiserver/pkg/apiserver/schema (structural.go, validation.go — the
structural rules; pruning/algorithm.go; defaulting/algorithm.go and prunenulls.go) and the validator of
kube-openapi (pkg/validation/validate, wrapped by apiextensions' validation.go to turn its errors into
field errors). The messages are upstream's (`spec.replicas: Invalid value: "string": spec.replicas in
body must be of type integer: "string"`): people search for them and tests compare them.

A schema here is the JSON dict of the CRD. The object's root is validated without `apiVersion`, `kind`
and `metadata` (the server owns and checks those); pruning keeps them at the root and in every
`x-kubernetes-embedded-resource` node.

Left out: `$ref`-free schemas only (CRDs forbid `$ref` anyway); `x-kubernetes-list-type` map/set
uniqueness is checked, but lists are not correlated item by item for `oldSelf` (cel.py).
"""

from __future__ import annotations

import base64
import binascii
import functools
import ipaddress
import json
import math
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import Any

import re2

from control.apimachinery.meta import deep_copy
from control.apimachinery.validation import ErrorType, FieldError

Schema = Mapping[str, Any]

TYPES = ("object", "array", "string", "integer", "number", "boolean")
ROOT_FIELDS = ("apiVersion", "kind", "metadata")
PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"
EMBEDDED = "x-kubernetes-embedded-resource"
VALIDATIONS = "x-kubernetes-validations"
# What a structural schema node may carry (upstream's Structural + ValueValidation + extensions);
# anything else is refused at CRD creation as upstream's "must not be set" / unknown field.
_KEYWORDS = frozenset({
    "type", "format", "title", "description", "default", "nullable", "properties", "additionalProperties",
    "items", "required", "enum", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength",
    "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "multipleOf", "maxProperties",
    "minProperties", "allOf", "anyOf", "oneOf", "not", "example", "externalDocs", PRESERVE, INT_OR_STRING,
    EMBEDDED, VALIDATIONS, "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
})
_VALUE_ONLY = ("allOf", "anyOf", "oneOf", "not")


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def type_name(value: Any) -> str:
    """The JSON type of a value as kube-openapi names it in `Invalid value: "<type>"`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


# -- checking a schema (CRD creation) --------------------------------------------------------------------

def structural_errors(schema: Any, path: str) -> list[FieldError]:
    """Upstream's structural-schema rules on a CRD's openAPIV3Schema at `path`: every node has a type
    (unless int-or-string or preserving unknown fields), the root is an object, value-only keywords carry
    no type or structure, the root metadata restricts only name and generateName, patterns compile."""
    errors: list[FieldError] = []
    if not isinstance(schema, dict):
        return [FieldError.invalid(path, type_name(schema), "must be of type object")]
    _check_node(schema, path, errors, root=True)
    if schema.get("type") not in (None, "object"):
        errors.append(FieldError.invalid(join(path, "type"), schema.get("type"), "must be object at the root"))
    metadata = (schema.get("properties") or {}).get("metadata")
    if isinstance(metadata, dict):
        restricted = set(metadata.get("properties") or {}) - {"name", "generateName"}
        if set(metadata) - {"type", "properties"} or restricted:
            errors.append(FieldError.forbidden(join(path, "properties[metadata]"),
                                               "must not specify anything other than name and generateName, "
                                               "but metadata is implicitly specified"))
    return errors


def _check_node(node: Any, path: str, errors: list[FieldError], *, root: bool = False,
                value_only: bool = False) -> None:
    if not isinstance(node, dict):
        errors.append(FieldError.invalid(path, type_name(node), "must be of type object"))
        return
    for key in node:
        if key not in _KEYWORDS:
            errors.append(FieldError.forbidden(join(path, key), "unknown field or not allowed in a structural "
                                                              "schema"))
    kind = node.get("type")
    if value_only:
        for key in ("type", "additionalProperties", "default", "nullable", PRESERVE, INT_OR_STRING, EMBEDDED):
            if key in node:
                errors.append(FieldError.forbidden(join(path, key), "must not be specified inside a value "
                                                                    "validation (allOf, anyOf, oneOf, not)"))
    elif kind is None and not node.get(INT_OR_STRING) and not node.get(PRESERVE):
        if not root:
            errors.append(FieldError.required(join(path, "type"), "must not be empty for specified object "
                                                                  "fields"))
    if kind is not None and kind not in TYPES:
        errors.append(FieldError.not_supported(join(path, "type"), kind, TYPES))
    if node.get(INT_OR_STRING) and kind is not None:
        errors.append(FieldError.invalid(join(path, "type"), kind, "must be empty if x-kubernetes-int-or-string "
                                                                   "is true"))
    if "properties" in node and "additionalProperties" in node and node["additionalProperties"] not in (None, False):
        errors.append(FieldError.forbidden(join(path, "additionalProperties"), "additionalProperties and "
                                                                               "properties are mutual exclusive"))
    if kind == "array" and not value_only and "items" not in node:
        errors.append(FieldError.required(join(path, "items"), "must be specified"))
    pattern = node.get("pattern")
    if pattern is not None and (not isinstance(pattern, str) or compiled_pattern(pattern) is None):
        errors.append(FieldError.invalid(join(path, "pattern"), pattern, "must be a valid regular expression"))
    if node.get(EMBEDDED) and kind != "object":
        errors.append(FieldError.invalid(join(path, "type"), kind, "must be object if "
                                                                   "x-kubernetes-embedded-resource is true"))
    for name, child in (node.get("properties") or {}).items():
        _check_node(child, f"{path}.properties[{name}]", errors, value_only=value_only)
    if isinstance(node.get("additionalProperties"), dict):
        _check_node(node["additionalProperties"], join(path, "additionalProperties"), errors, value_only=value_only)
    if isinstance(node.get("items"), dict):
        _check_node(node["items"], join(path, "items"), errors, value_only=value_only)
    elif "items" in node and not isinstance(node["items"], dict):
        errors.append(FieldError.forbidden(join(path, "items"), "items must be a schema object and not an array"))
    for key in _VALUE_ONLY:
        branches = node.get(key)
        for index, branch in enumerate(branches if isinstance(branches, list) else [branches] if branches else []):
            _check_node(branch, f"{path}.{key}[{index}]" if key != "not" else join(path, key), errors,
                        value_only=True)
    if "default" in node and not value_only:
        default = deep_copy(node["default"])
        prune(default, node, root=False)
        if default != node["default"]:
            errors.append(FieldError.invalid(join(path, "default"), node["default"], "must not have unknown "
                                                                                     "fields"))
        for error in validate(default, node, join(path, "default")):
            errors.append(error)


# -- validating an object ----------------------------------------------------------------------------

def validate(value: Any, schema: Schema, path: str, *, root: bool = False) -> list[FieldError]:
    """Every error of `value` against `schema` (at `path`); at the root the server's fields are skipped."""
    errors: list[FieldError] = []
    _validate(value, schema, path, errors, root=root)
    return errors


def _type_error(path: str, value: Any, wanted: str) -> FieldError:
    shown = json.dumps(value) if isinstance(value, str) else f'"{type_name(value)}"'
    return FieldError.invalid(path, type_name(value), f"{path} in body must be of type {wanted}: {shown}")


def _matches_type(value: Any, schema: Schema) -> bool:
    kind = schema.get("type")
    if schema.get(INT_OR_STRING):
        return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
    if kind is None:
        return True
    return {
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "string": isinstance(value, str),
        "integer": (isinstance(value, int) and not isinstance(value, bool))
        or (isinstance(value, float) and value.is_integer()),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
    }.get(kind, True)


def _validate(value: Any, schema: Schema, path: str, errors: list[FieldError], *, root: bool = False) -> None:
    if value is None:
        if not schema.get("nullable") and (schema.get("type") or schema.get(INT_OR_STRING)):
            errors.append(_type_error(path, value, schema.get("type") or "string"))
        return
    if not _matches_type(value, schema):
        wanted = "integer,string" if schema.get(INT_OR_STRING) else schema["type"]
        errors.append(_type_error(path, value, wanted))
        return
    _enum(value, schema, path, errors)
    if isinstance(value, str):
        _string(value, schema, path, errors)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _number(value, schema, path, errors)
    elif isinstance(value, list):
        _array(value, schema, path, errors)
    elif isinstance(value, dict):
        _object(value, schema, path, errors, root=root)
    _combinators(value, schema, path, errors, root=root)


def _enum(value: Any, schema: Schema, path: str, errors: list[FieldError]) -> None:
    choices = schema.get("enum")
    if isinstance(choices, list) and value not in choices:
        errors.append(FieldError(ErrorType.NOT_SUPPORTED, path, value, "supported values: " + ", ".join(
            json.dumps(choice) for choice in choices)))


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a pattern that does not compile is the CRD's 422, not a line on stderr


@functools.lru_cache(maxsize=1024)
def compiled_pattern(pattern: str) -> re2._Regexp[str] | None:
    """A schema's `pattern` compiled for RE2, as upstream's Go regexp: matching takes time linear in the
    value, whatever the pattern (`(a+)+$` against "aaa…b" backtracks for ever in Python's `re`); a pattern
    RE2 does not take (backreferences, lookaround) is not a valid one, as upstream. None: it does not compile."""
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error:
        return None


def _string(value: str, schema: Schema, path: str, errors: list[FieldError]) -> None:
    if isinstance(schema.get("maxLength"), int) and len(value) > schema["maxLength"]:
        errors.append(FieldError(ErrorType.TOO_LONG, path, None, f"may not be more than {schema['maxLength']} "
                                 "bytes" if schema["maxLength"] != 1 else "may not be more than 1 byte"))
    if isinstance(schema.get("minLength"), int) and len(value) < schema["minLength"]:
        errors.append(FieldError.invalid(path, value, f"{path} in body should be at least {schema['minLength']} "
                                         "chars long"))
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and (compiled := compiled_pattern(pattern)) is not None and \
            compiled.search(value) is None:
        errors.append(FieldError.invalid(path, value, f"{path} in body should match '{pattern}'"))
    fmt = schema.get("format")
    if isinstance(fmt, str) and (check := FORMATS.get(fmt)) is not None and not check(value):
        errors.append(FieldError.invalid(path, value, f"{path} in body must be of type {fmt}: {json.dumps(value)}"))


def _number(value: float, schema: Schema, path: str, errors: list[FieldError]) -> None:
    shown: Any = int(value) if isinstance(value, float) and value.is_integer() else value
    maximum, minimum = schema.get("maximum"), schema.get("minimum")
    if isinstance(maximum, int | float):
        if schema.get("exclusiveMaximum") and value >= maximum:
            errors.append(FieldError.invalid(path, shown, f"{path} in body should be less than {maximum}"))
        elif value > maximum:
            errors.append(FieldError.invalid(path, shown, f"{path} in body should be less than or equal to "
                                             f"{maximum}"))
    if isinstance(minimum, int | float):
        if schema.get("exclusiveMinimum") and value <= minimum:
            errors.append(FieldError.invalid(path, shown, f"{path} in body should be greater than {minimum}"))
        elif value < minimum:
            errors.append(FieldError.invalid(path, shown, f"{path} in body should be greater than or equal to "
                                             f"{minimum}"))
    factor = schema.get("multipleOf")
    if isinstance(factor, int | float) and factor > 0 and not math.isclose(value / factor, round(value / factor)):
        errors.append(FieldError.invalid(path, shown, f"{path} in body should be a multiple of {factor}"))
    if schema.get("format") == "int32" and not -(2**31) <= value < 2**31:
        errors.append(FieldError.invalid(path, shown, f"{path} in body must be of type int32: {shown}"))


def _array(value: list[Any], schema: Schema, path: str, errors: list[FieldError]) -> None:
    if isinstance(schema.get("maxItems"), int) and len(value) > schema["maxItems"]:
        errors.append(FieldError.too_many(path, len(value), schema["maxItems"]))
    if isinstance(schema.get("minItems"), int) and len(value) < schema["minItems"]:
        errors.append(FieldError.invalid(path, len(value), f"{path} in body should have at least "
                                         f"{schema['minItems']} items"))
    list_type = schema.get("x-kubernetes-list-type")
    if schema.get("uniqueItems") or list_type == "set":
        seen: list[Any] = []
        for index, item in enumerate(value):
            if item in seen:
                errors.append(FieldError.duplicate(f"{path}[{index}]", item))
            seen.append(item)
    if list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen_keys: list[Any] = []
        for index, item in enumerate(value):
            if isinstance(item, dict):
                identity = {k: item.get(k) for k in keys}
                if identity in seen_keys:
                    errors.append(FieldError.duplicate(f"{path}[{index}]", identity))
                seen_keys.append(identity)
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            _validate(item, items, f"{path}[{index}]", errors)


def _object(value: dict[str, Any], schema: Schema, path: str, errors: list[FieldError], *, root: bool) -> None:
    properties = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if name not in value and not (root and name in ROOT_FIELDS):
            errors.append(FieldError.required(join(path, name)))
    count = len(value) - (sum(1 for k in ROOT_FIELDS if k in value) if root else 0)
    if isinstance(schema.get("maxProperties"), int) and count > schema["maxProperties"]:
        errors.append(FieldError.too_many(path, count, schema["maxProperties"]))
    if isinstance(schema.get("minProperties"), int) and count < schema["minProperties"]:
        errors.append(FieldError.invalid(path, count, f"{path} in body should have at least "
                                         f"{schema['minProperties']} properties"))
    additional = schema.get("additionalProperties")
    for name, item in value.items():
        if root and name in ROOT_FIELDS:
            continue
        if schema.get(EMBEDDED) and name in ROOT_FIELDS:
            continue
        child = properties.get(name)
        if child is None and isinstance(additional, dict):
            child = additional
        if isinstance(child, dict):
            _validate(item, child, f"{path}.{name}" if path else name, errors)
    if schema.get(EMBEDDED):
        for name in ("apiVersion", "kind"):
            if not value.get(name):
                errors.append(FieldError.required(join(path, name), "must not be empty"))


def _combinators(value: Any, schema: Schema, path: str, errors: list[FieldError], *, root: bool) -> None:
    for branch in schema.get("allOf") or []:
        _validate_value_only(value, branch, path, errors, root=root)
    any_of = schema.get("anyOf")
    if isinstance(any_of, list) and any_of and all(validate_value_only(value, b, path, root=root) for b in any_of):
        errors.append(FieldError.invalid(path, type_name(value), f'"{path}" must validate at least one schema '
                                         "(anyOf)"))
    one_of = schema.get("oneOf")
    if isinstance(one_of, list) and one_of:
        passing = sum(1 for b in one_of if not validate_value_only(value, b, path, root=root))
        if passing != 1:
            errors.append(FieldError.invalid(path, type_name(value), f'"{path}" must validate one and only one '
                                             "schema (oneOf)"))
    not_ = schema.get("not")
    if isinstance(not_, dict) and not validate_value_only(value, not_, path, root=root):
        errors.append(FieldError.invalid(path, type_name(value), f'"{path}" must not validate the schema (not)'))


def validate_value_only(value: Any, branch: Schema, path: str, *, root: bool = False) -> list[FieldError]:
    """A value-validation branch (allOf/anyOf/oneOf/not) has no type of its own: the value is checked only
    against what it says."""
    errors: list[FieldError] = []
    _validate_value_only(value, branch, path, errors, root=root)
    return errors


def _validate_value_only(value: Any, branch: Schema, path: str, errors: list[FieldError], *, root: bool) -> None:
    if not isinstance(branch, dict):
        return
    _validate(value, {k: v for k, v in branch.items() if k != "type"}, path, errors, root=root)


# -- formats (kube-openapi strfmt, the ones CRDs accept) -------------------------------------------------

def _date(value: str) -> bool:
    try:
        datetime.strptime(value, "%Y-%m-%d")
    except ValueError:
        return False
    return True


def _date_time(value: str) -> bool:
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return "T" in value.upper() or " " in value


def _ip(version: int) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            return ipaddress.ip_address(value).version == version
        except ValueError:
            return False
    return check


def _cidr(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return "/" in value


def _uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return len(value) == 36


def _byte(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}"
                       r"[a-zA-Z0-9])?)*$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$")
_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h|d|w))+$")
FORMATS: Mapping[str, Callable[[str], bool]] = {
    "date": _date, "date-time": _date_time, "email": lambda v: bool(_EMAIL.match(v)),
    "hostname": lambda v: bool(_HOSTNAME.match(v)), "ipv4": _ip(4), "ipv6": _ip(6), "cidr": _cidr,
    "uuid": _uuid, "byte": _byte, "mac": lambda v: bool(_MAC.match(v)),
    "duration": lambda v: bool(_DURATION.match(v)),
}


# -- pruning and defaulting ------------------------------------------------------------------------------

def _children(value: dict[str, Any], schema: Schema) -> Iterator[tuple[str, Schema | None]]:
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for name in list(value):
        child = properties.get(name)
        if child is None and isinstance(additional, dict):
            child = additional
        yield name, child


def prune(value: Any, schema: Schema, *, root: bool = True) -> None:
    """Drop (in place) every field the schema does not specify, as upstream's pruning does: at the root
    and in embedded resources apiVersion/kind/metadata stay; `x-kubernetes-preserve-unknown-fields` and
    `additionalProperties` keep what they cover."""
    if isinstance(value, dict) and (schema.get("type") in ("object", None)):
        keep_unknown = bool(schema.get(PRESERVE)) or schema.get("additionalProperties") in (True,)
        for name, child in _children(value, schema):
            if (root or schema.get(EMBEDDED)) and name in ROOT_FIELDS:
                continue  # the server's own (metadata may only restrict name and generateName)
            if child is None:
                if not keep_unknown:
                    del value[name]
                continue
            prune(value[name], child, root=False)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            prune(item, schema["items"], root=False)


def apply_defaults(value: Any, schema: Schema) -> None:
    """Fill (in place) absent fields that have a `default`, top-down, and drop nulls of fields that are
    neither nullable nor defaulted (upstream defaulting/algorithm.go and prunenulls.go)."""
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for name, child in properties.items():
            if not isinstance(child, dict):
                continue
            if name in value and value[name] is None and not child.get("nullable"):
                if "default" in child:
                    value[name] = deep_copy(child["default"])
                else:
                    del value[name]
            elif name not in value and "default" in child:
                value[name] = deep_copy(child["default"])
        for name, node in _children(value, schema):
            if isinstance(node, dict):
                if value[name] is None and name not in properties and not node.get("nullable") and "default" in node:
                    value[name] = deep_copy(node["default"])
                apply_defaults(value[name], node)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            if item is None and "default" in schema["items"] and not schema["items"].get("nullable"):
                value[index] = deep_copy(schema["items"]["default"])
            apply_defaults(value[index], schema["items"])
