"""Validation of policy/v1 PodDisruptionBudgets.

Upstream: pkg/apis/policy/validation/validation.go (ValidatePodDisruptionBudget, ValidatePodDisruptionBudgetSpec,
ValidatePodDisruptionBudgetStatusUpdate).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.validation.primitives import Check, Validator, int_or_percent, join, label_selector
from control.apimachinery.validation import FieldError


def _pod_disruption_budget(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """Upstream pkg/apis/policy/validation ValidatePodDisruptionBudget (policy/v1): minAvailable xor
    maxUnavailable, each a non-negative int or a percent up to 100%; an optional, well-formed selector
    (in policy/v1 an empty one selects every pod of the namespace); the status counts not negative."""
    if (spec := c.obj(obj, "spec", "spec")) is not None:
        if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
            c.add([FieldError.invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set")])
        for key in ("minAvailable", "maxUnavailable"):
            int_or_percent(c, spec, key, join("spec", key), at_most_100=True)
        label_selector(c, spec, "spec.selector", kind="poddisruptionbudget", required=False)
        c.supported(spec, "unhealthyPodEvictionPolicy", "spec.unhealthyPodEvictionPolicy",
                    ("AlwaysAllow", "IfHealthyBudget"))
    if (status := c.obj(obj, "status", "status")) is not None:
        for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
            c.nonnegative(status, key, join("status", key))


VALIDATORS: dict[str, Validator] = {
    "poddisruptionbudgets": _pod_disruption_budget,
}
