"""Validation of autoscaling/v2 HorizontalPodAutoscalers (what the API server stores; a v1 write is converted
first, control/api/autoscaling.py).

Upstream: pkg/apis/autoscaling/validation/validation.go (`validateHorizontalPodAutoscalerSpec`,
`ValidateCrossVersionObjectReference`, `validateMetrics` / `validateMetricSpec` / `validateResourceSource`
/ `validateMetricTarget`, `validateBehavior` / `validateScalingRules` / `validateScalingPolicy`), with its
messages. Only Resource and ContainerResource metric sources are checked in depth; Object, Pods and External
metrics are accepted by type (no controller here reads them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.validation.primitives import Check, Validator, join
from control.apimachinery.validation import FieldError

METRIC_SOURCE_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
MAX_STABILIZATION_WINDOW_SECONDS = 3600
MAX_PERIOD_SECONDS = 1800
_PATH_SEGMENT_FORBIDDEN = (".", "..")


def _path_segment(c: Check, value: str, path: str) -> None:
    """ValidatePathSegmentName: not `.` or `..`, no `/` or `%`."""
    if value in _PATH_SEGMENT_FORBIDDEN:
        c.add([FieldError.invalid(path, value, f"may not be '{value}'")])
    for bad in ("/", "%"):
        if bad in value:
            c.add([FieldError.invalid(path, value, f"may not contain '{bad}'")])


def _target(c: Check, target: Mapping[str, Any], path: str) -> None:
    kind = c.text(target, "type", join(path, "type"))
    if kind == "":
        c.add([FieldError.required(join(path, "type"), "must specify a metric target type")])
    elif kind is not None and kind not in ("Utilization", "Value", "AverageValue"):
        c.add([FieldError.invalid(join(path, "type"), kind, "must be either Utilization, Value, or AverageValue")])
    for key in ("value", "averageValue"):
        if target.get(key) is not None and (quantity := c.quantity(target[key], join(path, key))) is not None \
                and quantity.as_fraction() <= 0:
            c.add([FieldError.invalid(join(path, key), target[key], "must be positive")])
    utilization = c.integer(target, "averageUtilization", join(path, "averageUtilization"))
    if utilization is not None and utilization < 1:
        c.add([FieldError.invalid(join(path, "averageUtilization"), utilization, "must be greater than 0")])


def _resource_source(c: Check, source: Mapping[str, Any], path: str, *, container: bool) -> None:
    if not c.text(source, "name", join(path, "name")):
        c.add([FieldError.required(join(path, "name"), "must specify a resource name")])
    if container and not c.text(source, "container", join(path, "container")):
        c.add([FieldError.required(join(path, "container"), "must specify a container")])
    target = c.obj(source, "target", join(path, "target"))
    if target is None:
        return
    _target(c, target, join(path, "target"))
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        c.add([FieldError.required(join(path, "target.averageUtilization"),
                                   "must set either a target raw value or a target utilization")])
    if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        c.add([FieldError.forbidden(join(path, "target.averageValue"),
                                    "may not set both a target raw value and a target utilization")])


def _metric(c: Check, metric: Mapping[str, Any], path: str) -> None:
    kind = c.text(metric, "type", join(path, "type"))
    if kind == "":
        c.add([FieldError.required(join(path, "type"), "must specify a metric source type")])
    elif kind is not None and kind not in METRIC_SOURCE_TYPES:
        c.add([FieldError.not_supported(join(path, "type"), kind, METRIC_SOURCE_TYPES)])
    for key, container in (("resource", False), ("containerResource", True)):
        if metric.get(key) is not None and (source := c.obj(metric, key, join(path, key))) is not None:
            _resource_source(c, source, join(path, key), container=container)
    field = {"Resource": "resource", "ContainerResource": "containerResource", "Pods": "pods", "Object": "object",
             "External": "external"}.get(kind or "")
    if field is not None and metric.get(field) is None:
        c.add([FieldError.required(join(path, field), "must populate information for the given metric source")])


def _rules(c: Check, rules: Mapping[str, Any], path: str) -> None:
    window = c.integer(rules, "stabilizationWindowSeconds", join(path, "stabilizationWindowSeconds"))
    if window is not None and window < 0:
        c.add([FieldError.invalid(join(path, "stabilizationWindowSeconds"), window,
                                  "must be greater than or equal to zero")])
    elif window is not None and window > MAX_STABILIZATION_WINDOW_SECONDS:
        c.add([FieldError.invalid(join(path, "stabilizationWindowSeconds"), window,
                                  f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}")])
    c.supported(rules, "selectPolicy", join(path, "selectPolicy"), ("Disabled", "Max", "Min"))
    policies = c.items(rules, "policies", join(path, "policies"))
    if not policies:
        c.add([FieldError.required(join(path, "policies"), "must specify at least one Policy")])
    for policy_path, policy in policies:
        c.supported(policy, "type", join(policy_path, "type"), ("Percent", "Pods"), required=True)
        value = c.integer(policy, "value", join(policy_path, "value"))
        if value is None or value <= 0:
            c.add([FieldError.invalid(join(policy_path, "value"), value, "must be greater than zero")])
        period = c.integer(policy, "periodSeconds", join(policy_path, "periodSeconds"))
        if period is None or period <= 0:
            c.add([FieldError.invalid(join(policy_path, "periodSeconds"), period, "must be greater than zero")])
        elif period > MAX_PERIOD_SECONDS:
            c.add([FieldError.invalid(join(policy_path, "periodSeconds"), period,
                                      f"must be less than or equal to {MAX_PERIOD_SECONDS}")])


def _horizontal_pod_autoscaler(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    minimum = c.integer(spec, "minReplicas", "spec.minReplicas")
    maximum = c.integer(spec, "maxReplicas", "spec.maxReplicas") or 0
    if minimum is not None and minimum < 1:
        c.add([FieldError.invalid("spec.minReplicas", minimum, "must be greater than or equal to 1")])
    if maximum < 1:
        c.add([FieldError.invalid("spec.maxReplicas", maximum, "must be greater than 0")])
    if minimum is not None and maximum < minimum:
        c.add([FieldError.invalid("spec.maxReplicas", maximum, "must be greater than or equal to `minReplicas`")])
    if (ref := c.obj(spec, "scaleTargetRef", "spec.scaleTargetRef")) is not None:
        for key in ("kind", "name"):
            value = c.text(ref, key, f"spec.scaleTargetRef.{key}")
            if value == "":
                c.add([FieldError.required(f"spec.scaleTargetRef.{key}")])
            elif value is not None:
                _path_segment(c, value, f"spec.scaleTargetRef.{key}")
    for metric_path, metric in c.items(spec, "metrics", "spec.metrics"):
        _metric(c, metric, metric_path)
    if spec.get("behavior") is not None and (behavior := c.obj(spec, "behavior", "spec.behavior")) is not None:
        for key in ("scaleUp", "scaleDown"):
            if behavior.get(key) is not None and (rules := c.obj(behavior, key, f"spec.behavior.{key}")) is not None:
                _rules(c, rules, f"spec.behavior.{key}")


VALIDATORS: dict[str, Validator] = {
    "horizontalpodautoscalers": _horizontal_pod_autoscaler,
}
