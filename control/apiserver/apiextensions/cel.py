"""`x-kubernetes-validations`: CEL rules on schema nodes, with cel-python as the evaluator.

Upstream: k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel (compilation.go, validation.go). A rule
sees the node's value as `self`; a rule naming `oldSelf` is a transition rule, evaluated only on update
and only where the old object has a value at the same place (correlated through object properties and
map values, not through list items). A rule that does not hold gives upstream's error at the node's path:
`spec: Invalid value: "object": failed rule: self.min <= self.max`, or the rule's `message`, or the
string its `messageExpression` yields; `fieldPath` moves the error to a child field; `reason` picks the
error type (FieldValueInvalid by default, FieldValueForbidden, FieldValueRequired, FieldValueDuplicate).

Why cel-python (a runtime dependency): it is a maintained pure-Python CEL implementation (cloud-custodian,
0.5.0 released 2026-01) that parses and evaluates the CEL the Kubernetes docs use (macros `all`,
`exists`, `has`, string functions, `matches`); a rule that does not compile is refused at CRD creation
with its parse error. Departures: values are typed from the JSON (a schema `number` becomes a double);
the Kubernetes CEL libraries (`quantity()`, `url()`, `isSorted()`, ...) are not there, so a rule using
them fails to compile and the CRD is refused with that message; the cost budget is upstream's numbers in
units of evaluated nodes (celcost.py), checked as the rules run, with no static estimate at CRD creation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

import celpy
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError, CELSyntaxError, CELUnsupportedError

from control.apimachinery.validation import ErrorType, FieldError
from control.apiserver.apiextensions import celcost
from control.apiserver.apiextensions import schema as structural

_OLD_SELF = re.compile(r"\boldSelf\b")
_REASONS = {"FieldValueInvalid": ErrorType.INVALID, "FieldValueForbidden": ErrorType.FORBIDDEN,
            "FieldValueRequired": ErrorType.REQUIRED, "FieldValueDuplicate": ErrorType.DUPLICATE}
_ENV = celpy.Environment(runner_class=celcost.MeteredRunner)


class CELError(Exception):
    """A rule that does not compile."""


@lru_cache(maxsize=1024)
def _program(rule: str) -> Any:
    try:
        return _ENV.program(_ENV.compile(rule))
    except (CELParseError, CELSyntaxError, CELUnsupportedError, CELEvalError, ValueError, TypeError) as exc:
        raise CELError(str(exc).strip()) from None


def compile_errors(schema: Any, path: str) -> list[FieldError]:
    """Every rule under `schema` (at `path`) that does not compile, for CRD validation."""
    errors: list[FieldError] = []
    for node_path, node in _nodes(schema, path):
        for index, rule in enumerate(node.get(structural.VALIDATIONS) or []):
            rule_path = f"{node_path}.{structural.VALIDATIONS}[{index}]"
            if not isinstance(rule, dict) or not isinstance(rule.get("rule"), str) or not rule["rule"]:
                errors.append(FieldError.required(f"{rule_path}.rule"))
                continue
            for key in ("rule", "messageExpression"):
                if isinstance(rule.get(key), str):
                    try:
                        _program(rule[key])
                    except CELError as exc:
                        errors.append(FieldError.invalid(f"{rule_path}.{key}", rule[key],
                                                         f"compilation failed: {exc}"))
            reason = rule.get("reason")
            if reason is not None and reason not in _REASONS:
                errors.append(FieldError.not_supported(f"{rule_path}.reason", reason, _REASONS))
    return errors


def _nodes(schema: Any, path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if not isinstance(schema, dict):
        return
    yield path, schema
    for name, child in (schema.get("properties") or {}).items():
        yield from _nodes(child, f"{path}.properties[{name}]")
    for key in ("additionalProperties", "items"):
        yield from _nodes(schema.get(key), f"{path}.{key}")


def has_rules(schema: Any) -> bool:
    return any(node.get(structural.VALIDATIONS) for _, node in _nodes(schema, ""))


def _typed(value: Any, schema: Mapping[str, Any]) -> Any:
    """The JSON value with schema numbers as floats (CEL has no implicit int/double comparison)."""
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        return {k: _typed(v, properties.get(k) or (additional if isinstance(additional, dict) else {}))
                for k, v in value.items()}
    if isinstance(value, list):
        items = schema.get("items")
        return [_typed(v, items if isinstance(items, dict) else {}) for v in value]
    if schema.get("type") == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


_MISSING = object()


def validate(value: Any, old: Any, schema: Mapping[str, Any], path: str) -> list[FieldError]:
    """Every failed rule of `value` (with `old`, the stored value at the same place, or `_MISSING`)."""
    errors: list[FieldError] = []
    with celcost.metering():
        try:
            _validate(value, old, schema, path, errors, root=True)
        except celcost.CostExceeded as exc:  # the object's budget is spent: no further rule runs
            errors.append(FieldError.invalid(path or "<nil>", schema.get("type") or structural.type_name(value),
                                             str(exc)))
    return errors


def validate_object(obj: Mapping[str, Any], old: Mapping[str, Any] | None,
                    schema: Mapping[str, Any]) -> list[FieldError]:
    """The rules of a whole custom object (the root node sees the object without its server fields)."""
    return validate(obj, old if old is not None else _MISSING, schema, "")


def _validate(value: Any, old: Any, schema: Mapping[str, Any], path: str, errors: list[FieldError], *,
              root: bool = False) -> None:
    if value is None or not isinstance(schema, dict):
        return
    for rule in schema.get(structural.VALIDATIONS) or []:
        transition = bool(_OLD_SELF.search(rule.get("rule", "")))
        if transition and old is _MISSING:
            continue
        errors.extend(_check(rule, value, old, schema, path, root=root))
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for name, item in value.items():
            if root and name in structural.ROOT_FIELDS:
                continue
            child = properties.get(name) or (additional if isinstance(additional, dict) else None)
            if child is not None:
                previous = old.get(name, _MISSING) if isinstance(old, dict) else _MISSING
                _validate(item, previous, child, structural.join(path, name), errors)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _validate(item, _MISSING, schema["items"], f"{path}[{index}]", errors)


def _activation(value: Any, old: Any, schema: Mapping[str, Any], *, root: bool) -> dict[str, Any]:
    if root and isinstance(value, dict):
        value = {k: v for k, v in value.items() if k not in ("metadata",)}
    names = {"self": json_to_cel(_typed(value, schema))}
    if old is not _MISSING:
        if root and isinstance(old, dict):
            old = {k: v for k, v in old.items() if k not in ("metadata",)}
        names["oldSelf"] = json_to_cel(_typed(old, schema))
    return names


def _check(rule: Mapping[str, Any], value: Any, old: Any, schema: Mapping[str, Any], path: str, *,
           root: bool) -> list[FieldError]:
    text = rule.get("rule", "")
    field = path or "<nil>"
    if isinstance(rule.get("fieldPath"), str) and rule["fieldPath"]:
        field = path + rule["fieldPath"] if path else rule["fieldPath"].lstrip(".")
    kind = schema.get("type") or structural.type_name(value)
    try:
        activation = _activation(value, old, schema, root=root)
        result = _program(text).evaluate(activation)
    except CELError as exc:
        return [FieldError.invalid(field, kind, f"compilation failed: {exc}")]
    except celcost.CostExceeded as exc:
        if not exc.per_call:
            raise
        return [FieldError.invalid(field, kind, f"'{exc}': call cost exceeds limit for rule: {text}")]
    except (CELEvalError, ValueError, TypeError, KeyError, ZeroDivisionError) as exc:
        # an evaluation error (no such key, no such overload) fails the rule
        reason = exc.args[0] if exc.args else exc
        return [FieldError.invalid(field, kind, f"{_detail(rule, text)}: evaluation error: {reason}")]
    if result is True or (isinstance(result, celpy.celtypes.BoolType) and bool(result)):
        return []
    detail = _detail(rule, text)
    if isinstance(rule.get("messageExpression"), str):
        try:
            produced = _program(rule["messageExpression"]).evaluate(activation)
            if isinstance(produced, str) and produced.strip():
                detail = str(produced)
        except (CELError, CELEvalError, ValueError, TypeError, KeyError):
            pass  # upstream falls back to the message (or the rule) when the expression fails
    error_type = _REASONS.get(rule.get("reason") or "FieldValueInvalid", ErrorType.INVALID)
    if error_type is ErrorType.INVALID:
        return [FieldError.invalid(field, kind, detail)]
    return [FieldError(error_type, field, kind, detail)]


def _detail(rule: Mapping[str, Any], text: str) -> str:
    message = rule.get("message")
    return message if isinstance(message, str) and message else f"failed rule: {text}"
