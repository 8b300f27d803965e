"""CEL for admission: webhooks' `matchConditions` and ValidatingAdmissionPolicies' expressions, on the CEL
library the CRDs' `x-kubernetes-validations` use (cel-python).

Upstream: k8s.io/apiserver/pkg/admission/plugin/cel (the variables `object`, `oldObject`, `request`,
`params`, `namespaceObject`, `variables`) and webhook/matchconditions/matcher.go (every condition true:
call; any false: skip; otherwise an error, decided by the failurePolicy).

Departures: no `authorizer` variable, no Kubernetes CEL libraries and no cost budget (as for the CRDs'
rules, control/apiserver/apiextensions/cel.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import celpy
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError, CELSyntaxError, CELUnsupportedError

_ENV = celpy.Environment()


class ExpressionError(Exception):
    """An expression that does not compile or does not evaluate."""


@lru_cache(maxsize=1024)
def _program(expression: str) -> Any:
    try:
        return _ENV.program(_ENV.compile(expression))
    except (CELParseError, CELSyntaxError, CELUnsupportedError, CELEvalError, ValueError, TypeError) as exc:
        raise ExpressionError(f"compilation failed: {str(exc).strip()}") from None


def compile_error(expression: str) -> str | None:
    """Why `expression` does not compile, or None."""
    try:
        _program(expression)
    except ExpressionError as exc:
        return str(exc)
    return None


def activation(values: Mapping[str, Any]) -> dict[str, Any]:
    """CEL values for JSON ones (`object`, `oldObject`, `request`, ...); None stays CEL null."""
    return {name: json_to_cel(value) for name, value in values.items()}


def cel_map(values: Mapping[str, Any]) -> Any:
    """A CEL map of values that are CEL values already (a policy's `variables`)."""
    return celpy.celtypes.MapType({celpy.celtypes.StringType(k): v for k, v in values.items()})


def evaluate(expression: str, names: Mapping[str, Any]) -> Any:
    """The expression's value over an `activation`; ExpressionError when it fails."""
    program = _program(expression)
    try:
        result = program.evaluate(dict(names))
    except (CELEvalError, ValueError, TypeError, KeyError, ZeroDivisionError, AttributeError) as exc:
        raise ExpressionError(str(exc.args[0] if exc.args else exc)) from None
    if isinstance(result, CELEvalError):
        raise ExpressionError(str(result.args[0] if result.args else result))
    return result


def is_bool(value: Any) -> bool:
    return isinstance(value, (bool, celpy.celtypes.BoolType))


def is_true(value: Any) -> bool:
    return is_bool(value) and bool(value)


def match_conditions(conditions: Sequence[Mapping[str, Any]], names: Mapping[str, Any]) -> bool:
    """True when every condition holds, False as soon as one is false; ExpressionError when none is false
    and one failed (upstream evaluates them all and lets a false one win over an error)."""
    errors: list[str] = []
    for condition in conditions:
        name, expression = condition.get("name", ""), condition.get("expression", "")
        try:
            value = evaluate(str(expression), names)
        except ExpressionError as exc:
            errors.append(f"matchCondition '{name}': {exc}")
            continue
        if not is_bool(value):
            errors.append(f"matchCondition '{name}': must evaluate to bool")
        elif not is_true(value):
            return False
    if errors:
        raise ExpressionError("; ".join(errors))
    return True
